/// The mode byte of a GeoRacing frame.
///
/// v1 and v2 know four modes (0–3); v3 also carries yellow flag (4) and VSC (5). `init(rawValue:)`
/// reads a v1 or v2 byte, so 4 and 5 are `.unknown` there; `init(v3RawValue:)` reads a v3 byte.
/// `rawValue` is the byte as sent either way.
public enum GeoRacingMode: Hashable, Sendable {
    case normal
    case safetyCar
    case redFlag
    case evacuation
    /// v3 only.
    case yellowFlag
    /// v3 only.
    case vsc
    /// A mode byte this version does not know; the raw value is kept.
    case unknown(UInt8)

    /// A v1 or v2 mode byte.
    public init(rawValue: UInt8) {
        switch rawValue {
        case 0: self = .normal
        case 1: self = .safetyCar
        case 2: self = .redFlag
        case 3: self = .evacuation
        default: self = .unknown(rawValue)
        }
    }

    /// A v3 mode byte: v1's four, then 4 yellow flag and 5 VSC. 6 is v3's "unknown" (race control
    /// has no state), which claims nothing, as any byte not defined.
    public init(v3RawValue rawValue: UInt8) {
        switch rawValue {
        case 4: self = .yellowFlag
        case 5: self = .vsc
        default: self.init(rawValue: rawValue)
        }
    }

    public var rawValue: UInt8 {
        switch self {
        case .normal: 0
        case .safetyCar: 1
        case .redFlag: 2
        case .evacuation: 3
        case .yellowFlag: 4
        case .vsc: 5
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
        case .yellowFlag: "yellow_flag"
        case .vsc: "vsc"
        case .unknown: "unknown"
        }
    }
}

/// Why manufacturer data with the GeoRacing company id is not a GeoRacing frame.
public enum GeoRacingRejection: Error, Hashable, Sendable, CaseIterable {
    /// The length does not match the version (or there is no version byte at all).
    case badLength
    /// The version byte is none of 1, 2, 3 and 0xFF.
    case badVersion
    /// A command frame (`[0xFF][command]`) whose command byte is not 0, 1 or 2.
    case badCommand
    /// A v3 frame of a kind this version does not know (neither circuit nor staff).
    case badKind

    /// The reason as printed in summaries and JSON.
    public var reason: String {
        switch self {
        case .badLength: "bad_length"
        case .badVersion: "bad_version"
        case .badCommand: "bad_command"
        case .badKind: "bad_kind"
        }
    }
}

/// The command byte of a GeoRacing staff command frame, `[0xFF][command]`, as GeoRacing's staff app
/// (`BleCommandService`) sends it for 30 s. Its numbers are not the mode byte's: 1 is evacuate here.
public enum GeoRacingCommand: UInt8, Hashable, Sendable, CaseIterable {
    /// Back to normal: clears the sender's own command claim.
    case normal = 0
    case evacuate = 1
    case danger = 2

    /// How long a command claims, seconds: the staff app's own broadcast time. `normal` claims
    /// nothing (a TTL of 0 clears).
    public static let claimSeconds: UInt8 = 30

    /// The mode a command stands for: evacuate is an evacuation, danger a red flag.
    public var mode: GeoRacingMode {
        switch self {
        case .normal: .normal
        case .evacuate: .evacuation
        case .danger: .redFlag
        }
    }

    public var ttl: UInt8 { self == .normal ? 0 : Self.claimSeconds }

    /// The command a mode is sent as: normal and evacuation as themselves, any other mode (a flag)
    /// as danger, the fail-safe reading.
    public init(sending mode: GeoRacingMode) {
        switch mode {
        case .normal: self = .normal
        case .evacuation: self = .evacuate
        default: self = .danger
        }
    }
}
