/// A GeoRacing v3 frame: a circuit or staff claim authenticated with a venue key, 24 bytes after
/// the company id, so that it fits one legacy advertisement with the Flags structure (31 bytes:
/// 3 of Flags, 4 of manufacturer header). Multi-byte fields are big-endian (docs/frames.md):
///
/// `[3][key id << 4 | kind][zone u16][mode][flags][sequence u16][ttl_s][temperature][T u32]
/// [source_id u16][tag 8]`
///
/// T is the signing time in whole seconds of wall clock (Unix time, unsigned 32-bit). The tag is
/// HMAC-SHA256 of the domain string, the company id and the 16 bytes before it, with the key of
/// `keyID` for T's day, cut to 8 bytes (`GeoRacingSignedFrame.message`); this type only lays the
/// bytes out: checking the tag takes a key, which the daemon holds.
public struct GeoRacingSignedFrame: Hashable, Sendable {
    /// The version byte.
    public static let version: UInt8 = 3
    /// The frame's length after the company id.
    public static let length = 24
    /// The bytes the tag covers, from the version byte.
    public static let signedLength = 16
    /// The tag's length: HMAC-SHA256 cut to 64 bits.
    public static let tagLength = 8
    /// The domain-separation string that starts every authenticated message.
    public static let domain: [UInt8] = Array("GeoRacing-v3".utf8)

    /// Who the frame speaks for (the low 4 bits of byte 1).
    public enum Kind: Hashable, Sendable {
        /// A circuit beacon: a zone's claim (v1's meaning).
        case circuit
        /// A staff device: `sourceID` is its id (v2's meaning).
        case staff
        /// A kind this version does not know (2–15): it claims nothing.
        case other(UInt8)

        public init(rawValue: UInt8) {
            switch rawValue & 0x0F {
            case 0: self = .circuit
            case 1: self = .staff
            default: self = .other(rawValue & 0x0F)
            }
        }

        public var rawValue: UInt8 {
            switch self {
            case .circuit: 0
            case .staff: 1
            case .other(let raw): raw & 0x0F
            }
        }
    }

    /// The mode byte. v3 carries every mode: v1's four with v1's numbers, then yellow flag, VSC and
    /// "unknown" (race control has no state: it claims nothing). Any other byte is kept as sent.
    public struct Mode: Hashable, Sendable {
        public let rawValue: UInt8

        public init(rawValue: UInt8) { self.rawValue = rawValue }

        public static let normal = Mode(rawValue: 0)
        public static let safetyCar = Mode(rawValue: 1)
        public static let redFlag = Mode(rawValue: 2)
        public static let evacuation = Mode(rawValue: 3)
        public static let yellowFlag = Mode(rawValue: 4)
        public static let vsc = Mode(rawValue: 5)
        public static let unknown = Mode(rawValue: 6)

        private static let names = ["normal", "safety_car", "red_flag", "evacuation", "yellow_flag", "vsc", "unknown"]

        /// One of the seven modes (0–6).
        public var isDefined: Bool { Int(rawValue) < Self.names.count }

        /// The name in JSON output and the socket protocol; "unknown" for a byte not defined.
        public var name: String { isDefined ? Self.names[Int(rawValue)] : "unknown" }
    }

    /// 0–15: which of the venue's keys signed it.
    public var keyID: UInt8
    public var kind: Kind
    public var zone: UInt16
    public var mode: Mode
    public var flags: UInt8
    public var sequence: UInt16
    /// Time to live in seconds.
    public var ttl: UInt8
    /// Whole °C, unsigned, as v1's optional byte (0 when the sender has none).
    public var temperature: UInt8
    /// The signing time, whole seconds since 1970 (UTC).
    public var signedAt: UInt32
    /// The staff device's id; 0 for a circuit beacon.
    public var sourceID: UInt16
    public var tag: [UInt8]

    public init(
        keyID: UInt8, kind: Kind, zone: UInt16, mode: Mode, flags: UInt8 = 0, sequence: UInt16, ttl: UInt8,
        temperature: UInt8 = 0, signedAt: UInt32, sourceID: UInt16 = 0,
        tag: [UInt8] = [UInt8](repeating: 0, count: GeoRacingSignedFrame.tagLength)
    ) {
        self.keyID = keyID & 0x0F
        self.kind = kind
        self.zone = zone
        self.mode = mode
        self.flags = flags
        self.sequence = sequence
        self.ttl = ttl
        self.temperature = temperature
        self.signedAt = signedAt
        self.sourceID = sourceID
        self.tag = Array(tag.prefix(Self.tagLength)) + [UInt8](repeating: 0, count: max(0, Self.tagLength - tag.count))
    }

    /// Lays out a v3 frame (the manufacturer data after the company id). Its tag is not checked here.
    public init(parsing payload: UnsafeRawBufferPointer) throws(GeoRacingRejection) {
        guard payload.first == Self.version else { throw .badVersion }
        guard payload.count == Self.length else { throw .badLength }
        @inline(__always) func be16(_ at: Int) -> UInt16 { UInt16(payload[at]) << 8 | UInt16(payload[at + 1]) }
        keyID = payload[1] >> 4
        kind = Kind(rawValue: payload[1])
        zone = be16(2)
        mode = Mode(rawValue: payload[4])
        flags = payload[5]
        sequence = be16(6)
        ttl = payload[8]
        temperature = payload[9]
        signedAt = UInt32(be16(10)) << 16 | UInt32(be16(12))
        sourceID = be16(14)
        tag = Array(payload[Self.signedLength..<Self.length])
    }

    /// The v3 frame a signal carries; nil when it is no v3 signal.
    public init?(_ signal: GeoRacingSignal) {
        guard signal.version == .v3, let signature = signal.signature else { return nil }
        self.init(
            keyID: signature.keyID, kind: signature.kind, zone: signal.zone, mode: Mode(rawValue: signal.mode.rawValue),
            flags: signal.flags, sequence: signal.sequence, ttl: signal.ttl, temperature: signal.temperature ?? 0,
            signedAt: signature.signedAt, sourceID: UInt16(truncatingIfNeeded: signal.sourceID ?? 0),
            tag: signature.tagBytes)
    }

    /// The signal of this frame, as the decoder reads it; `.badKind` for a kind that claims nothing.
    public func signal() throws(GeoRacingRejection) -> GeoRacingSignal {
        try GeoRacingSignal(parsing: encoded())
    }

    /// Lays out a v3 frame from any byte collection.
    public init(parsing payload: some Collection<UInt8>) throws(GeoRacingRejection) {
        let bytes = Array(payload)
        let result = bytes.withUnsafeBytes { raw in
            Result { () throws(GeoRacingRejection) in try GeoRacingSignedFrame(parsing: raw) }
        }
        self = try result.get()
    }

    /// The 16 bytes the tag covers: everything before it.
    public var signedPart: [UInt8] {
        var bytes: [UInt8] = [Self.version, keyID << 4 | kind.rawValue]
        bytes.reserveCapacity(Self.length)
        func be16(_ value: UInt16) { bytes += [UInt8(value >> 8), UInt8(truncatingIfNeeded: value)] }
        be16(zone)
        bytes += [mode.rawValue, flags]
        be16(sequence)
        bytes += [ttl, temperature]
        be16(UInt16(signedAt >> 16))
        be16(UInt16(truncatingIfNeeded: signedAt))
        be16(sourceID)
        return bytes
    }

    /// The frame as a beacon sends it (without the company id).
    public func encoded() -> [UInt8] { signedPart + tag }

    /// What the tag authenticates: the domain string, the company id as on the air (little-endian)
    /// and the signed part.
    public static func message(signedPart: [UInt8], companyID: UInt16) -> [UInt8] {
        domain + [UInt8(truncatingIfNeeded: companyID), UInt8(companyID >> 8)] + signedPart
    }

    /// Complete advertising data carrying this frame: flags, then the manufacturer data (31 bytes).
    public func advertisingData(companyID: UInt16 = GeoRacingSignal.defaultCompanyID) -> [UInt8] {
        var builder = AdvertisingDataBuilder()
        builder.appendFlags(0x06)
        builder.appendManufacturerData(companyID: companyID, payload: encoded())
        return builder.bytes
    }
}

/// What a v3 frame adds to a GeoRacing signal: which key signed it, for whom, when, and the tag.
public struct GeoRacingSignature: Hashable, Sendable {
    /// 0–15: which of the venue's keys signed it.
    public var keyID: UInt8
    /// `.circuit` or `.staff` (the decoder rejects any other kind).
    public var kind: GeoRacingSignedFrame.Kind
    /// The signing time, whole seconds since 1970 (UTC), on the sender's clock.
    public var signedAt: UInt32
    /// The 8 tag bytes as one number, the first byte most significant: held without an array,
    /// so decoding a v3 report allocates nothing.
    public var tag: UInt64

    public init(keyID: UInt8, kind: GeoRacingSignedFrame.Kind, signedAt: UInt32, tag: UInt64 = 0) {
        self.keyID = keyID & 0x0F
        self.kind = kind
        self.signedAt = signedAt
        self.tag = tag
    }

    /// The tag as the frame carries it.
    public var tagBytes: [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: tag >> (56 - 8 * $0)) } }
}
