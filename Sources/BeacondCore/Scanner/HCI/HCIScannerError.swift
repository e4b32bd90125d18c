import Glibc

/// Why the HCI backend could not scan, worded for the operator who has to fix it.
package enum HCIScannerError: Error, Hashable, Sendable, CustomStringConvertible {
    /// socket(AF_BLUETOOTH) failed with EAFNOSUPPORT.
    case bluetoothUnavailable
    /// EPERM or EACCES while opening the adapter or sending it a command.
    case permissionDenied(adapter: String, operation: String)
    /// The kernel removed LE Meta events from the socket's filter: no CAP_NET_RAW.
    case leMetaFiltered(adapter: String)
    /// hci_devid found no adapter of that name; `known` lists the ones the kernel has.
    case noAdapter(adapter: String, known: [String])
    /// The adapter exists but is down (ENETDOWN).
    case adapterDown(adapter: String)
    /// The adapter went away or its socket failed while scanning.
    case adapterGone(adapter: String, reason: String)
    case commandTimeout(adapter: String, opcode: UInt16, timeout: Int64)
    case commandFailed(adapter: String, opcode: UInt16, status: UInt8)
    /// Command Disallowed on enabling the scan: somebody else is scanning.
    case scanBusy(adapter: String, opcode: UInt16)
    /// The adapter answered LE Read Local Supported Features with an error: no LE.
    case notLowEnergy(adapter: String, status: UInt8)
    case invalidConfiguration(String)
    /// Another system call failed; `adapter` is empty when the call concerned none.
    case system(adapter: String, operation: String, errno: Int32)
    /// Shutdown was requested while a command was in flight; not shown to anyone.
    case shuttingDown

    /// Errors no retry can fix: `run()` throws them instead of waiting for the adapter. A kernel
    /// without Bluetooth is not one: on a kiosk whose dongle is not plugged in yet, the bluetooth
    /// module may only load when it is, so the daemon waits for it as for a missing adapter.
    var isPermanent: Bool {
        switch self {
        case .permissionDenied, .leMetaFiltered, .invalidConfiguration: true
        default: false
        }
    }

    /// The error for a failed system call, by errno.
    static func fromErrno(_ code: Int32, adapter: String, operation: String) -> HCIScannerError {
        switch code {
        case EAFNOSUPPORT, EPROTONOSUPPORT: .bluetoothUnavailable
        case EPERM, EACCES: .permissionDenied(adapter: adapter, operation: operation)
        case ENODEV: .noAdapter(adapter: adapter, known: [])
        case ENETDOWN: .adapterDown(adapter: adapter)
        default: .system(adapter: adapter, operation: operation, errno: code)
        }
    }

    static let capabilityHint =
        """
        beacond needs CAP_NET_RAW (run it as root, or grant it: AmbientCapabilities=CAP_NET_RAW in the unit, \
        or setcap cap_net_raw+ep on the binary)
        """

    package var description: String {
        switch self {
        case .bluetoothUnavailable:
            """
            this kernel has no Bluetooth support (socket(AF_BLUETOOTH) is not supported): plug in the adapter, \
            load the bluetooth module, or use --backend replay
            """
        case .permissionDenied(let adapter, let operation):
            "permission denied to \(operation) on \(adapter): \(Self.capabilityHint)"
        case .leMetaFiltered(let adapter):
            """
            the kernel removed LE Meta events from the \(adapter) socket's filter, so no advertisement would ever \
            arrive: it does that without CAP_NET_RAW; \(Self.capabilityHint)
            """
        case .noAdapter(let adapter, let known):
            "no Bluetooth adapter named \(adapter)"
                + (known.isEmpty ? " (the kernel has none)" : " (the kernel has \(known.joined(separator: ", ")))")
        case .adapterDown(let adapter):
            "adapter \(adapter) is down (bring it up: hciconfig \(adapter) up, and check rfkill list)"
        case .adapterGone(let adapter, let reason):
            "adapter \(adapter) is gone (\(reason))"
        case .commandTimeout(let adapter, let opcode, let timeout):
            "\(adapter) did not answer \(HCIOpcode.describe(opcode)) within \(DecimalText.format(micros: timeout)) s"
        case .commandFailed(let adapter, let opcode, let status):
            "\(adapter) rejected \(HCIOpcode.describe(opcode)): \(HCIStatus.describe(status))"
        case .scanBusy(let adapter, let opcode):
            """
            \(adapter) refused to start scanning (\(HCIOpcode.describe(opcode)): Command Disallowed): another \
            scanner, usually bluetoothd discovery, is using it; use --backend bluez, or stop discovery \
            (bluetoothctl scan off)
            """
        case .notLowEnergy(let adapter, let status):
            "\(adapter) does not support Bluetooth LE (LE Read Local Supported Features: \(HCIStatus.describe(status)))"
        case .invalidConfiguration(let reason):
            "hci scanner: \(reason)"
        case .system(let adapter, let operation, let code):
            "cannot \(operation)\(adapter.isEmpty ? "" : " on \(adapter)"): \(errnoText(code))"
        case .shuttingDown:
            "shutting down"
        }
    }
}

/// HCI status codes the backend reacts to or names (Core spec Vol 1 Part F).
package enum HCIStatus {
    package static let success: UInt8 = 0x00
    static let unknownCommand: UInt8 = 0x01
    static let commandDisallowed: UInt8 = 0x0C
    static let unknownAdvertisingIdentifier: UInt8 = 0x42

    static func describe(_ status: UInt8) -> String {
        let hex = "status 0x" + String(status, radix: 16, uppercase: true).zeroPadded(to: 2)
        let name: String? =
            switch status {
            case 0x01: "Unknown HCI Command"
            case 0x03: "Hardware Failure"
            case 0x0C: "Command Disallowed"
            case 0x0D: "Memory Capacity Exceeded"
            case 0x11: "Unsupported Feature or Parameter Value"
            case 0x12: "Invalid HCI Command Parameters"
            case 0x1F: "Unspecified Error"
            case 0x42: "Unknown Advertising Identifier"
            default: nil
            }
        return name.map { "\(hex) (\($0))" } ?? hex
    }
}

/// The HCI commands the backend sends.
package enum HCIOpcode {
    /// HCI Reset: the kernel sends it when it brings an adapter up, and for `hciconfig reset`.
    package static let reset: UInt16 = 0x0C03
    package static let readLocalSupportedCommands: UInt16 = 0x1002
    package static let leReadLocalSupportedFeatures: UInt16 = 0x2003
    static let leSetScanParameters: UInt16 = 0x200B
    static let leSetScanEnable: UInt16 = 0x200C
    static let leSetExtendedScanParameters: UInt16 = 0x2041
    static let leSetExtendedScanEnable: UInt16 = 0x2042
    static let leSetAdvertisingParameters: UInt16 = 0x2006
    static let leSetAdvertisingData: UInt16 = 0x2008
    static let leSetAdvertisingEnable: UInt16 = 0x200A
    static let leSetExtendedAdvertisingParameters: UInt16 = 0x2036
    static let leSetExtendedAdvertisingData: UInt16 = 0x2037
    static let leSetExtendedAdvertisingEnable: UInt16 = 0x2039
    static let leRemoveAdvertisingSet: UInt16 = 0x203C

    static func name(_ opcode: UInt16) -> String? {
        switch opcode {
        case reset: "Reset"
        case readLocalSupportedCommands: "Read Local Supported Commands"
        case leReadLocalSupportedFeatures: "LE Read Local Supported Features"
        case leSetScanParameters: "LE Set Scan Parameters"
        case leSetScanEnable: "LE Set Scan Enable"
        case leSetExtendedScanParameters: "LE Set Extended Scan Parameters"
        case leSetExtendedScanEnable: "LE Set Extended Scan Enable"
        case leSetAdvertisingParameters: "LE Set Advertising Parameters"
        case leSetAdvertisingData: "LE Set Advertising Data"
        case leSetAdvertisingEnable: "LE Set Advertising Enable"
        case leSetExtendedAdvertisingParameters: "LE Set Extended Advertising Parameters"
        case leSetExtendedAdvertisingData: "LE Set Extended Advertising Data"
        case leSetExtendedAdvertisingEnable: "LE Set Extended Advertising Enable"
        case leRemoveAdvertisingSet: "LE Remove Advertising Set"
        default: nil
        }
    }

    /// "LE Set Scan Enable (0x200C)".
    static func describe(_ opcode: UInt16) -> String {
        let hex = "0x" + String(opcode, radix: 16, uppercase: true).zeroPadded(to: 4)
        return name(opcode).map { "\($0) (\(hex))" } ?? "command \(hex)"
    }
}
