/// The mode byte of a GeoRacing frame.
public enum GeoRacingMode: Hashable, Sendable {
    case normal
    case safetyCar
    case redFlag
    case evacuation
    /// A mode byte this version does not know; the raw value is kept.
    case unknown(UInt8)

    public init(rawValue: UInt8) {
        switch rawValue {
        case 0: self = .normal
        case 1: self = .safetyCar
        case 2: self = .redFlag
        case 3: self = .evacuation
        default: self = .unknown(rawValue)
        }
    }

    public var rawValue: UInt8 {
        switch self {
        case .normal: 0
        case .safetyCar: 1
        case .redFlag: 2
        case .evacuation: 3
        case .unknown(let raw): raw
        }
    }

    public var isKnown: Bool {
        if case .unknown = self { return false }
        return true
    }

    /// The mode's name in JSON output and the socket protocol.
    public var name: String {
        switch self {
        case .normal: "normal"
        case .safetyCar: "safety_car"
        case .redFlag: "red_flag"
        case .evacuation: "evacuation"
        case .unknown: "unknown"
        }
    }
}

/// Why manufacturer data with the GeoRacing company id is not a GeoRacing signal.
public enum GeoRacingRejection: Error, Hashable, Sendable, CaseIterable {
    /// The length does not match the version (or there is no version byte at all).
    case badLength
    /// The version byte is neither 1 nor 2.
    case badVersion

    /// The reason as printed in summaries and JSON.
    public var reason: String {
        switch self {
        case .badLength: "bad_length"
        case .badVersion: "bad_version"
        }
    }
}

/// A GeoRacing beacon frame, the payload of manufacturer data with the
/// GeoRacing company id (the bytes after the company id). All multi-byte
/// fields are big-endian.
///
/// - v1 circuit beacon: `[1][zone u16][mode][flags][sequence u16][ttl_s]`, then an
///   optional `[temperature i8]`: 8 or 9 bytes.
/// - v2 staff broadcast: `[2][source_id u32][zone u16][mode][flags][sequence u16][ttl_s][reserved]`:
///   13 bytes.
public struct GeoRacingSignal: Hashable, Sendable {
    public enum Version: UInt8, Sendable {
        case v1 = 1
        case v2 = 2
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
    /// v1 only, when the beacon sends it: °C.
    public var temperature: Int8?
    /// v2 only: the staff device's id.
    public var sourceID: UInt32?
    /// v2 only: the reserved byte, kept so encoding mirrors decoding.
    public var reserved: UInt8

    public init(
        version: Version, zone: UInt16, mode: GeoRacingMode, flags: UInt8 = 0, sequence: UInt16,
        ttl: UInt8, temperature: Int8? = nil, sourceID: UInt32? = nil, reserved: UInt8 = 0
    ) {
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

    /// A v1 circuit beacon frame.
    public static func circuit(
        zone: UInt16, mode: GeoRacingMode, sequence: UInt16, ttl: UInt8 = 10, flags: UInt8 = 0,
        temperature: Int8? = nil
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

    /// Decodes a frame (the manufacturer data after the company id).
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
            self.temperature = payload.count == 9 ? Int8(bitPattern: payload[8]) : nil
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
        if version == .v2 {
            let source = sourceID ?? 0
            bytes += [
                UInt8(source >> 24), UInt8(truncatingIfNeeded: source >> 16),
                UInt8(truncatingIfNeeded: source >> 8), UInt8(truncatingIfNeeded: source),
            ]
        }
        be16(zone)
        bytes.append(mode.rawValue)
        bytes.append(flags)
        be16(sequence)
        bytes.append(ttl)
        switch version {
        case .v1:
            if let temperature { bytes.append(UInt8(bitPattern: temperature)) }
        case .v2:
            bytes.append(reserved)
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

/// What the GeoRacing decoder found in one report's advertising data.
public enum GeoRacingMatch {
    /// No manufacturer data with the GeoRacing company id.
    case none
    case signal(GeoRacingSignal)
    case rejected(GeoRacingRejection)
}

/// Finds GeoRacing frames in advertising data, for a configurable company id.
public struct GeoRacingDecoder: Sendable {
    public var companyID: UInt16

    public init(companyID: UInt16 = GeoRacingSignal.defaultCompanyID) {
        self.companyID = companyID
    }

    /// The first valid GeoRacing frame in `data`; failing that, the first
    /// rejection; failing that, `.none`.
    public func decode(_ data: AdvertisingData) -> GeoRacingMatch {
        var match = GeoRacingMatch.none
        for entry in data.manufacturerData where entry.companyID == companyID {
            do throws(GeoRacingRejection) {
                return .signal(try GeoRacingSignal(parsing: entry.payload))
            } catch {
                if case .none = match { match = .rejected(error) }
            }
        }
        return match
    }
}
