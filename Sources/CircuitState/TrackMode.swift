import BLEPayload

/// The one track mode a screen shows, in severity order.
public enum TrackMode: String, Hashable, Sendable, CaseIterable, Comparable {
    case normal = "normal"
    case yellowFlag = "yellow_flag"
    case vsc = "vsc"
    case safetyCar = "safety_car"
    case redFlag = "red_flag"
    case evacuation = "evacuation"

    /// 0 (normal) to 5 (evacuation).
    public var severity: Int {
        switch self {
        case .normal: 0
        case .yellowFlag: 1
        case .vsc: 2
        case .safetyCar: 3
        case .redFlag: 4
        case .evacuation: 5
        }
    }

    public static func < (lhs: TrackMode, rhs: TrackMode) -> Bool { lhs.severity < rhs.severity }

    /// The mode byte a v3 frame carries for this mode (v1's four keep their numbers).
    public var signedFrameMode: GeoRacingMode {
        [GeoRacingMode.normal, .yellowFlag, .vsc, .safetyCar, .redFlag, .evacuation][severity]
    }

    /// The track mode a beacon's mode byte stands for; nil for an unknown byte.
    public init?(_ beaconMode: GeoRacingMode) {
        switch beaconMode {
        case .normal: self = .normal
        case .safetyCar: self = .safetyCar
        case .redFlag: self = .redFlag
        case .evacuation: self = .evacuation
        case .yellowFlag: self = .yellowFlag
        case .vsc: self = .vsc
        case .unknown: return nil
        }
    }
}

extension TrackMode {
    /// The track mode a venue API mode name names (`RemoteModeName`: trimmed, case-folded, look-alike
    /// letters read as Latin, GeoRacing's synonyms); nil for anything else.
    public init?(remoteName: String) {
        guard let mode = RemoteModeName.trackMode(remoteName) else { return nil }
        self = mode
    }
}
