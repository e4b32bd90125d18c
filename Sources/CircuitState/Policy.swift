/// Where a published track mode came from.
public enum StateSource: String, Hashable, Sendable, CaseIterable {
    case beacon
    case remote
    case none
}

/// How the best beacon override and the remote state combine into one published mode.
public enum Policy: String, Hashable, Sendable, CaseIterable {
    /// A beacon red flag or evacuation wins unless the remote state is more severe;
    /// otherwise the remote state wins, and beacons fill in when it is absent.
    case safety
    case beaconFirst = "beacon-first"
    case mostSevere = "most-severe"

    /// Which of the two to publish; `.none` when both are absent.
    public func source(beacon: TrackMode?, remote: TrackMode?) -> StateSource {
        if remote == .evacuation && beacon != .evacuation { return .remote }
        switch self {
        case .safety:
            if let beacon, beacon >= .redFlag {
                if let remote, remote > beacon { return .remote }
                return .beacon
            }
            if remote != nil { return .remote }
            return beacon != nil ? .beacon : .none
        case .beaconFirst:
            if beacon != nil { return .beacon }
            return remote != nil ? .remote : .none
        case .mostSevere:
            switch (beacon, remote) {
            case (nil, nil): return .none
            case (.some, nil): return .beacon
            case (nil, .some): return .remote
            case (.some(let beacon), .some(let remote)): return remote > beacon ? .remote : .beacon
            }
        }
    }
}

/// The part of the published state that screens switch on; a change of any field is a change of state.
public struct Decision: Hashable, Sendable {
    /// nil: unknown, no decision.
    public var mode: TrackMode?
    public var source: StateSource
    /// The override's zone when the source is a beacon; otherwise nil.
    public var zone: UInt16?

    public init(mode: TrackMode?, source: StateSource, zone: UInt16?) {
        self.mode = mode
        self.source = source
        self.zone = zone
    }

    public static let undecided = Decision(mode: nil, source: .none, zone: nil)

    /// The mode's name in JSON output and the socket protocol.
    public var modeName: String { mode?.rawValue ?? "unknown" }
}
