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
/// - v3 signed frame (`GeoRacingSignedFrame`): a circuit or staff claim with a venue key's tag,
///   24 bytes. Its `signature` holds what v3 adds; its tag is checked by the daemon, which holds
///   the keys, before the frame may count.
///
/// GeoRacing's attendee app also sends user beacons on the company id (`GeoRacingUserBeacon`):
/// they claim nothing and are not signals.
public struct GeoRacingSignal: Hashable, Sendable {
    public enum Version: UInt8, Sendable, CaseIterable {
        case v1 = 1
        case v2 = 2
        case v3 = 3
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
    /// v1, when the beacon sends it, and v3: whole °C, unsigned.
    public var temperature: UInt8?
    /// v2: the staff device's id; v3: the transmitter's (16 bits).
    public var sourceID: UInt32?
    /// v2 only: the reserved byte, kept so encoding mirrors decoding.
    public var reserved: UInt8
    /// v3 only: the key id, kind, signing time and tag.
    public var signature: GeoRacingSignature?

    /// A `.command` frame's fields are the command's (`init(command:)`): `mode` picks the command.
    /// A v3 frame takes `signature` (a zero one when nil) and a 16-bit source id.
    public init(
        version: Version, zone: UInt16, mode: GeoRacingMode, flags: UInt8 = 0, sequence: UInt16,
        ttl: UInt8, temperature: UInt8? = nil, sourceID: UInt32? = nil, reserved: UInt8 = 0,
        signature: GeoRacingSignature? = nil
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
        switch version {
        case .v1: self.temperature = temperature
        case .v3: self.temperature = temperature ?? 0
        case .v2, .command: self.temperature = nil
        }
        switch version {
        case .v2: self.sourceID = sourceID ?? 0
        case .v3: self.sourceID = (sourceID ?? 0) & 0xFFFF
        case .v1, .command: self.sourceID = nil
        }
        self.reserved = version == .v2 ? reserved : 0
        self.signature = version == .v3 ? (signature ?? GeoRacingSignature(keyID: 0, kind: .circuit, signedAt: 0)) : nil
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
        signature = nil
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

    /// Whether this is a v3 frame: its claim counts only once the daemon has checked its tag.
    public var isSigned: Bool { signature != nil }

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
            self.signature = nil
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
            self.signature = nil
        case GeoRacingSignedFrame.version:
            guard payload.count == GeoRacingSignedFrame.length else { throw .badLength }
            let kind = GeoRacingSignedFrame.Kind(rawValue: payload[1])
            guard kind == .circuit || kind == .staff else { throw .badKind }
            let signedAt = UInt32(be16(10)) << 16 | UInt32(be16(12))
            let tag = (0..<4).reduce(UInt64(0)) { $0 << 16 | UInt64(be16(16 + 2 * $1)) }
            self.version = .v3
            self.zone = be16(2)
            self.mode = GeoRacingMode(v3RawValue: payload[4])
            self.flags = payload[5]
            self.sequence = be16(6)
            self.ttl = payload[8]
            self.temperature = payload[9]
            self.sourceID = UInt32(be16(14))
            self.reserved = 0
            self.signature = GeoRacingSignature(keyID: payload[1] >> 4, kind: kind, signedAt: signedAt, tag: tag)
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
        if let frame = GeoRacingSignedFrame(self) { return frame.encoded() }
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
        case .v1, .v3:
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
        case .command, .v3:
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
