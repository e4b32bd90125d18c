/// A GeoRacing frame that claims a mode: the payload of manufacturer data with the GeoRacing
/// company id (the bytes after the company id). All multi-byte fields are big-endian.
///
/// - v1 circuit beacon: `[1][zone u16][mode][flags][sequence u16][ttl_s]`, then an
///   optional `[temperature u8]` (whole °C, as GeoRacing's Windows beacon writes it: clamped
///   0–255): 8 or 9 bytes.
/// - v2 staff broadcast: `[2][source_id u32][zone u16][mode][flags][sequence u16][ttl_s][reserved]`:
///   13 bytes.
/// - staff command: `[0xFF][command]`: 2 bytes (`GeoRacingCommand`). It names no zone, sequence
///   or TTL: it reads as circuit-wide, sequence 0, with the command's TTL.
///
/// GeoRacing's attendee app also sends user beacons on the company id (`GeoRacingUserBeacon`):
/// they claim nothing and are not signals.
public struct GeoRacingSignal: Hashable, Sendable {
    public enum Version: UInt8, Sendable, CaseIterable {
        case v1 = 1
        case v2 = 2
        case command = 0xFF
    }

    /// The default GeoRacing company identifier.
    public static let defaultCompanyID: UInt16 = 0x1234

    public var version: Version
    public var zone: UInt16
    public var mode: GeoRacingMode
    public var flags: UInt8
    public var sequence: UInt16
    /// Time to live in seconds.
    public var ttl: UInt8
    /// v1 only, when the beacon sends it: whole °C, unsigned.
    public var temperature: UInt8?
    /// v2 only: the staff device's id.
    public var sourceID: UInt32?
    /// v2 only: the reserved byte, kept so encoding mirrors decoding.
    public var reserved: UInt8

    /// A `.command` frame's fields are the command's (`init(command:)`): `mode` picks the command.
    public init(
        version: Version, zone: UInt16, mode: GeoRacingMode, flags: UInt8 = 0, sequence: UInt16,
        ttl: UInt8, temperature: UInt8? = nil, sourceID: UInt32? = nil, reserved: UInt8 = 0
    ) {
        guard version != .command else {
            self = GeoRacingSignal(command: GeoRacingCommand(sending: mode))
            return
        }
        self.version = version
        self.zone = zone
        self.mode = mode
        self.flags = flags
        self.sequence = sequence
        self.ttl = ttl
        self.temperature = version == .v1 ? temperature : nil
        self.sourceID = version == .v2 ? (sourceID ?? 0) : nil
        self.reserved = version == .v2 ? reserved : 0
    }

    /// A staff command frame.
    public init(command: GeoRacingCommand) {
        version = .command
        zone = 0
        mode = command.mode
        flags = 0
        sequence = 0
        ttl = command.ttl
        temperature = nil
        sourceID = nil
        reserved = 0
    }

    /// A v1 circuit beacon frame.
    public static func circuit(
        zone: UInt16, mode: GeoRacingMode, sequence: UInt16, ttl: UInt8 = 10, flags: UInt8 = 0,
        temperature: UInt8? = nil
    ) -> GeoRacingSignal {
        GeoRacingSignal(
            version: .v1, zone: zone, mode: mode, flags: flags, sequence: sequence, ttl: ttl,
            temperature: temperature)
    }

    /// A v2 staff danger broadcast.
    public static func staff(
        sourceID: UInt32, zone: UInt16, mode: GeoRacingMode, sequence: UInt16, ttl: UInt8, flags: UInt8 = 0
    ) -> GeoRacingSignal {
        GeoRacingSignal(
            version: .v2, zone: zone, mode: mode, flags: flags, sequence: sequence, ttl: ttl,
            sourceID: sourceID)
    }

    /// The command of a `.command` frame.
    public var command: GeoRacingCommand? {
        version == .command ? GeoRacingCommand(sending: mode) : nil
    }

    /// Decodes a frame (the manufacturer data after the company id). A user beacon's lengths are
    /// `badLength` here; `GeoRacingDecoder` tells them apart.
    public init(parsing payload: UnsafeRawBufferPointer) throws(GeoRacingRejection) {
        guard let versionByte = payload.first else { throw .badLength }
        // Each branch checks the exact length first, so every index below is in range.
        @inline(__always) func be16(_ at: Int) -> UInt16 { UInt16(payload[at]) << 8 | UInt16(payload[at + 1]) }
        switch versionByte {
        case 1:
            guard payload.count == 8 || payload.count == 9 else { throw .badLength }
            self.version = .v1
            self.sourceID = nil
            self.zone = be16(1)
            self.mode = GeoRacingMode(rawValue: payload[3])
            self.flags = payload[4]
            self.sequence = be16(5)
            self.ttl = payload[7]
            self.temperature = payload.count == 9 ? payload[8] : nil
            self.reserved = 0
        case 2:
            guard payload.count == 13 else { throw .badLength }
            self.version = .v2
            self.sourceID = UInt32(be16(1)) << 16 | UInt32(be16(3))
            self.zone = be16(5)
            self.mode = GeoRacingMode(rawValue: payload[7])
            self.flags = payload[8]
            self.sequence = be16(9)
            self.ttl = payload[11]
            self.reserved = payload[12]
            self.temperature = nil
        case 0xFF:
            guard payload.count == 2 else { throw .badLength }
            guard let command = GeoRacingCommand(rawValue: payload[1]) else { throw .badCommand }
            self = GeoRacingSignal(command: command)
        default:
            throw .badVersion
        }
    }

    /// Decodes a frame from any byte collection.
    public init(parsing payload: some Collection<UInt8>) throws(GeoRacingRejection) {
        let bytes = Array(payload)
        let result = bytes.withUnsafeBytes { raw in
            Result { () throws(GeoRacingRejection) in try GeoRacingSignal(parsing: raw) }
        }
        self = try result.get()
    }

    /// The frame as a beacon sends it (without the company id).
    public func encoded() -> [UInt8] {
        var bytes: [UInt8] = [version.rawValue]
        func be16(_ value: UInt16) { bytes += [UInt8(value >> 8), UInt8(truncatingIfNeeded: value)] }
        switch version {
        case .command:
            return bytes + [GeoRacingCommand(sending: mode).rawValue]
        case .v2:
            let source = sourceID ?? 0
            bytes += [
                UInt8(source >> 24), UInt8(truncatingIfNeeded: source >> 16),
                UInt8(truncatingIfNeeded: source >> 8), UInt8(truncatingIfNeeded: source),
            ]
        case .v1:
            break
        }
        be16(zone)
        bytes.append(mode.rawValue)
        bytes.append(flags)
        be16(sequence)
        bytes.append(ttl)
        switch version {
        case .v1:
            if let temperature { bytes.append(temperature) }
        case .v2:
            bytes.append(reserved)
        case .command:
            break
        }
        return bytes
    }

    /// Complete advertising data carrying this frame: flags, then the manufacturer data.
    public func advertisingData(companyID: UInt16 = GeoRacingSignal.defaultCompanyID) -> [UInt8] {
        var builder = AdvertisingDataBuilder()
        builder.appendFlags(0x06)
        builder.appendManufacturerData(companyID: companyID, payload: encoded())
        return builder.bytes
    }
}
