/// Which command set the transmitter advertises with.
package enum HCIAdvertisingMode: String, Hashable, Sendable {
    /// LE Set Advertising Parameters / Data / Enable (0x2006 / 0x2008 / 0x200A): 4.x controllers.
    case legacy
    /// LE Set Extended Advertising Parameters / Data / Enable (0x2036 / 0x2037 / 0x2039), with a
    /// legacy PDU so 4.x scanners hear it: 5.x controllers, which refuse the legacy commands once
    /// the kernel has used the extended ones.
    case extended
}

/// The commands that start, change and stop a non-connectable GeoRacing advert.
enum HCIAdvertisingSetup {
    /// The advertising set the transmitter uses with the extended commands. The kernel numbers its
    /// own sets from 0 (instance 0, then bluetoothd's instances from 1), so a high handle stays
    /// out of their way.
    static let handle: UInt8 = 0x0E
    /// Advertising intervals the controller accepts for a non-connectable advert, in 0.625 ms
    /// units: 20 ms to 10.24 s.
    static let intervalUnits: ClosedRange<Int64> = 0x20...0x4000

    /// The kernel's `ext_adv_capable`: LE feature bit 12 (LE Extended Advertising), and the
    /// extended advertising commands (octet 36 bits 2, 3 and 5: parameters, data, enable).
    static func mode(leFeatures: [UInt8], supportedCommands: [UInt8]?) -> HCIAdvertisingMode {
        guard leFeatures.count > 1, leFeatures[1] & 0x10 != 0, let commands = supportedCommands,
            commands.count > 36, commands[36] & 0x2C == 0x2C
        else { return .legacy }
        return .extended
    }

    /// `interval` µs in 0.625 ms units, clamped to what the controller accepts.
    static func units(interval: Int64) -> UInt32 {
        UInt32(min(intervalUnits.upperBound, max(intervalUnits.lowerBound, interval / 625)))
    }

    /// Non-connectable, undirected, from the adapter's public address, on all three channels.
    static func parameters(_ mode: HCIAdvertisingMode, interval: Int64) -> HCICommand {
        let units = Self.units(interval: interval)
        func littleEndian(_ value: UInt32, bytes: Int) -> [UInt8] {
            (0..<bytes).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
        }
        let noPeer: [UInt8] = [0x00] + [UInt8](repeating: 0, count: 6)
        switch mode {
        case .legacy:
            // Interval min and max, ADV_NONCONN_IND, own address public, no peer, channels 37–39,
            // no filter.
            return HCICommand(
                opcode: HCIOpcode.leSetAdvertisingParameters,
                parameters: littleEndian(units, bytes: 2) + littleEndian(units, bytes: 2) + [0x03, 0x00] + noPeer
                    + [0x07, 0x00])
        case .extended:
            // Handle; properties 0x0010 (legacy PDU, neither connectable nor scannable: ADV_NONCONN_IND);
            // interval min and max (3 bytes each); channels 37–39; own address public; no peer; no
            // filter; TX power no preference (0x7F); LE 1M primary, no skip, LE 1M secondary; SID 0;
            // no scan request notifications.
            return HCICommand(
                opcode: HCIOpcode.leSetExtendedAdvertisingParameters,
                parameters: [handle, 0x10, 0x00] + littleEndian(units, bytes: 3) + littleEndian(units, bytes: 3)
                    + [0x07, 0x00] + noPeer + [0x00, 0x7F, 0x01, 0x00, 0x01, 0x00, 0x00])
        }
    }

    /// The advertising data (at most 31 bytes: a legacy PDU's).
    static func data(_ mode: HCIAdvertisingMode, _ bytes: [UInt8]) -> HCICommand {
        let data = Array(bytes.prefix(31))
        switch mode {
        case .legacy:
            return HCICommand(
                opcode: HCIOpcode.leSetAdvertisingData,
                parameters: [UInt8(data.count)] + data + [UInt8](repeating: 0, count: 31 - data.count))
        case .extended:
            // Operation 0x03: the complete data; fragment preference 0x01: do not fragment.
            return HCICommand(
                opcode: HCIOpcode.leSetExtendedAdvertisingData,
                parameters: [handle, 0x03, 0x01, UInt8(data.count)] + data)
        }
    }

    static func enable(_ mode: HCIAdvertisingMode, _ on: Bool) -> HCICommand {
        let flag: UInt8 = on ? 0x01 : 0x00
        switch mode {
        case .legacy:
            return HCICommand(opcode: HCIOpcode.leSetAdvertisingEnable, parameters: [flag])
        case .extended:
            // One set: this one, no duration, no event limit (disabling names it too, so the
            // kernel's and bluetoothd's own sets are left alone).
            return HCICommand(
                opcode: HCIOpcode.leSetExtendedAdvertisingEnable, parameters: [flag, 0x01, handle, 0, 0, 0])
        }
    }

    /// Stops advertising and, with the extended commands, frees the set; Command Disallowed and
    /// Unknown Advertising Identifier mean there was nothing to stop.
    static func stop(on channel: HCICommandChannel, mode: HCIAdvertisingMode, timeout: Int64)
        throws(HCIScannerError)
    {
        let nothing: Set<UInt8> = [HCIStatus.commandDisallowed, HCIStatus.unknownAdvertisingIdentifier]
        try channel.execute(enable(mode, false), timeout: timeout, tolerating: nothing, interruptible: false)
        if mode == .extended {
            try channel.execute(
                HCICommand(opcode: HCIOpcode.leRemoveAdvertisingSet, parameters: [handle]), timeout: timeout,
                tolerating: nothing, interruptible: false)
        }
    }

    /// Sends `frame` as GeoRacing's Windows beacon restarts its publisher on every change: disable,
    /// new data, enable, so scanners that filter duplicates hear the change. `parameters` also
    /// (re)sets the advertising parameters first (the first frame after the adapter came up).
    static func advertise(
        _ advertisingData: [UInt8], on channel: HCICommandChannel, mode: HCIAdvertisingMode, interval: Int64,
        parameters: Bool, timeout: Int64
    ) throws(HCIScannerError) {
        let nothing: Set<UInt8> = [HCIStatus.commandDisallowed, HCIStatus.unknownAdvertisingIdentifier]
        try channel.execute(enable(mode, false), timeout: timeout, tolerating: nothing, interruptible: false)
        if parameters {
            try channel.execute(self.parameters(mode, interval: interval), timeout: timeout, interruptible: false)
        }
        try channel.execute(data(mode, advertisingData), timeout: timeout, interruptible: false)
        try channel.execute(enable(mode, true), timeout: timeout, interruptible: false)
    }
}
