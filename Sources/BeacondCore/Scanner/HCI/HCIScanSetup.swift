/// Which command set the scan uses.
package enum HCIScanMode: String, Hashable, Sendable {
    /// LE Set Scan Parameters / Enable (0x200B / 0x200C).
    case legacy
    /// LE Set Extended Scan Parameters / Enable (0x2041 / 0x2042).
    case extended
}

/// The commands that start and stop a scan, and the sequence that sends them.
enum HCIScanSetup {
    /// What the controller says it supports, and the mode chosen from it.
    struct Capabilities: Hashable, Sendable {
        var leFeatures: [UInt8]
        /// nil when Read Local Supported Commands failed.
        var supportedCommands: [UInt8]?

        var mode: HCIScanMode {
            HCIScanSetup.supportsExtendedScanning(leFeatures: leFeatures, supportedCommands: supportedCommands ?? [])
                ? .extended : .legacy
        }

        /// Why `mode` was chosen, for the log.
        var reason: String {
            let feature = leFeatures.count > 1 && leFeatures[1] & 0x10 != 0
            guard let commands = supportedCommands else {
                return "Read Local Supported Commands failed"
            }
            let octet = commands.count > 37 ? commands[37] : 0
            return
                """
                LE feature bit 12 (extended advertising) \(feature ? "set" : "clear"), supported commands octet \
                37 bits 5–6 \(octet & 0x60 == 0x60 ? "set" : "not both set")
                """
        }
    }

    /// The kernel's `use_ext_scan`: LE feature bit 12 (LE Extended Advertising) and the
    /// extended scan commands (octet 37 bit 5: parameters, bit 6: enable). Never the HCI
    /// version: controllers claim versions whose optional features they lack.
    static func supportsExtendedScanning(leFeatures: [UInt8], supportedCommands: [UInt8]) -> Bool {
        guard leFeatures.count > 1, supportedCommands.count > 37 else { return false }
        return leFeatures[1] & 0x10 != 0 && supportedCommands[37] & 0x60 == 0x60
    }

    static func readLocalSupportedCommands() -> HCICommand {
        HCICommand(opcode: HCIOpcode.readLocalSupportedCommands, parameters: [])
    }

    static func readLEFeatures() -> HCICommand {
        HCICommand(opcode: HCIOpcode.leReadLocalSupportedFeatures, parameters: [])
    }

    /// Scan type, interval and window, own address public, accept-all filter policy.
    static func parameters(_ mode: HCIScanMode, active: Bool, interval: UInt16, window: UInt16) -> HCICommand {
        let type: UInt8 = active ? 0x01 : 0x00
        let timing = [
            UInt8(truncatingIfNeeded: interval), UInt8(interval >> 8),
            UInt8(truncatingIfNeeded: window), UInt8(window >> 8),
        ]
        switch mode {
        case .legacy:
            return HCICommand(opcode: HCIOpcode.leSetScanParameters, parameters: [type] + timing + [0x00, 0x00])
        case .extended:
            // Own address public, accept all, the LE 1M PHY only; then that PHY's type and timing.
            return HCICommand(
                opcode: HCIOpcode.leSetExtendedScanParameters, parameters: [0x00, 0x00, 0x01, type] + timing)
        }
    }

    /// Scan enable or disable with duplicate filtering off: every advertisement is reported, so
    /// beacons that repeat a frame are still heard (and the silence watchdog means something).
    static func enable(_ mode: HCIScanMode, _ on: Bool) -> HCICommand {
        let flag: UInt8 = on ? 0x01 : 0x00
        switch mode {
        case .legacy:
            return HCICommand(opcode: HCIOpcode.leSetScanEnable, parameters: [flag, 0x00])
        case .extended:
            // Duration 0 and period 0: scan until disabled.
            return HCICommand(opcode: HCIOpcode.leSetExtendedScanEnable, parameters: [flag, 0x00, 0, 0, 0, 0])
        }
    }

    /// Reads the LE features and the supported commands. `interruptible`: a signal of the
    /// channel's wake ends the wait with `.shuttingDown` (the transmitter's wake also means "new
    /// data", which must not abort its set-up).
    static func capabilities(on channel: HCICommandChannel, timeout: Int64, interruptible: Bool = true)
        throws(HCIScannerError) -> Capabilities
    {
        let features = try channel.send(readLEFeatures(), timeout: timeout, interruptible: interruptible)
        guard features.status == HCIStatus.success else {
            throw .notLowEnergy(adapter: channel.adapter, status: features.status)
        }
        let commands = try channel.send(readLocalSupportedCommands(), timeout: timeout, interruptible: interruptible)
        return Capabilities(
            leFeatures: features.parameters,
            supportedCommands: commands.status == HCIStatus.success ? commands.parameters : nil)
    }

    /// The full sequence: capabilities, then `startScan` in the mode they allow.
    static func start(on channel: HCICommandChannel, configuration: HCIScannerConfiguration)
        throws(HCIScannerError) -> Capabilities
    {
        let capabilities = try capabilities(on: channel, timeout: configuration.commandTimeout)
        try startScan(on: channel, mode: capabilities.mode, configuration: configuration)
        return capabilities
    }

    /// Disables whatever scan is running (Command Disallowed there means none is), sets the
    /// parameters and enables. Command Disallowed on parameters or enable means somebody else
    /// is scanning: `.scanBusy`.
    static func startScan(on channel: HCICommandChannel, mode: HCIScanMode, configuration: HCIScannerConfiguration)
        throws(HCIScannerError)
    {
        let units = try configuration.scanUnits()
        let timeout = configuration.commandTimeout
        try channel.execute(enable(mode, false), timeout: timeout, tolerating: [HCIStatus.commandDisallowed])
        do throws(HCIScannerError) {
            try channel.execute(
                parameters(
                    mode, active: configuration.active, interval: units.interval,
                    window: units.window), timeout: timeout)
            try channel.execute(enable(mode, true), timeout: timeout)
        } catch {
            if case .commandFailed(let adapter, let opcode, HCIStatus.commandDisallowed) = error {
                throw .scanBusy(adapter: adapter, opcode: opcode)
            }
            throw error
        }
        channel.resetSilence()
    }

    /// Disables the scan; Command Disallowed means it was already off. Not interruptible:
    /// shutdown waits for it.
    static func stop(on channel: HCICommandChannel, mode: HCIScanMode, timeout: Int64) throws(HCIScannerError) {
        try channel.execute(
            enable(mode, false), timeout: timeout, tolerating: [HCIStatus.commandDisallowed],
            interruptible: false)
    }
}
