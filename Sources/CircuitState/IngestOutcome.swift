import BLEPayload

/// Why a report was not an override candidate.
public enum IngestFilter: String, Hashable, Sendable, CaseIterable {
    case unknownMode = "unknown_mode"
    case rssi
    case zone
    case allow
    case distance
    /// A staff command frame while `fusion.command_frames` is `report`.
    case reportOnly = "report_only"
    /// An unsigned frame while `security.unsigned` is `reject`.
    case unsigned
}

/// What one report did to the override table.
public enum IngestOutcome: Hashable, Sendable {
    /// A new key, or one whose entry had expired: any sequence is accepted.
    case inserted
    /// A newer sequence replaced the entry.
    case replaced
    /// The same sequence again, with the claim's mode and zone, refreshed reception time, TTL and
    /// content and moved its expiry no earlier: a beacon's steady repeat.
    case refreshed
    /// The same sequence again with another mode or zone, or an earlier expiry: the claim in force
    /// was revised to it (counted as a repeat too).
    case revised
    /// An accepted frame with TTL 0 cleared the claim in force (it is held for the de-escalation hold).
    case cleared
    /// An older-sequence frame became the key's contested claim; `started` when the key had none.
    case contested(started: Bool)
    case ignoredOlder
    /// An unsigned frame that would have lowered, cleared or merely repeated a signed claim in force.
    case belowSigned
    case filtered(IngestFilter)
    /// A v3 frame the verifier turned away before the engine saw it (never returned by `ingest`:
    /// the daemon records it in the beacon directory so that `status` and `watch` show it).
    case unverified(SignatureRejection)
    /// The table is full of entries that may not be evicted for this one.
    case refused
}

public struct FusionCounters: Hashable, Sendable {
    /// New keys and newer sequences.
    public var accepted = 0
    public var repeats = 0
    public var cleared = 0
    /// Keys that gained a contested claim (an older sequence asserting more than the claim in force).
    public var contests = 0
    /// Frames that became or replaced a contested claim.
    public var contestedFrames = 0
    public var olderIgnored = 0
    /// Unsigned frames that would have lowered or cleared a signed claim.
    public var belowSigned = 0
    public var filteredUnknownMode = 0
    public var filteredRSSI = 0
    public var filteredZone = 0
    public var filteredAllow = 0
    public var filteredDistance = 0
    public var filteredReportOnly = 0
    public var filteredUnsigned = 0
    public var expired = 0
    public var evicted = 0
    public var refused = 0
    /// Entries a new configuration no longer admits.
    public var droppedByReconfiguration = 0
    public var remoteSuccesses = 0
    public var remoteFailures = 0

    public init() {}

    mutating func record(_ outcome: IngestOutcome) {
        switch outcome {
        case .inserted, .replaced: accepted += 1
        case .refreshed, .revised: repeats += 1
        case .cleared: cleared += 1
        case .contested(let started):
            contestedFrames += 1
            if started { contests += 1 }
        case .ignoredOlder: olderIgnored += 1
        case .belowSigned: belowSigned += 1
        case .unverified: break
        case .refused: refused += 1
        case .filtered(.unknownMode): filteredUnknownMode += 1
        case .filtered(.rssi): filteredRSSI += 1
        case .filtered(.zone): filteredZone += 1
        case .filtered(.allow): filteredAllow += 1
        case .filtered(.distance): filteredDistance += 1
        case .filtered(.reportOnly): filteredReportOnly += 1
        case .filtered(.unsigned): filteredUnsigned += 1
        }
    }
}
