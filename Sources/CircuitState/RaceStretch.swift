import BLEPayload

/// One row of a race's picture (`beacond report`): a zone's claims, what the screens showed, or
/// race control's state. Rows order as a page lists them: published, race control, then zones.
public enum RaceRow: Hashable, Sendable, Comparable {
    case published
    case raceControl
    case zone(UInt16)

    /// `published`, `race_control`, `zone 3`: the page's `data-row`.
    public var name: String {
        switch self {
        case .published: "published"
        case .raceControl: "race_control"
        case .zone(let zone): "zone \(zone)"
        }
    }

    private var order: (Int, UInt16) {
        switch self {
        case .published: (0, 0)
        case .raceControl: (1, 0)
        case .zone(let zone): (2, zone)
        }
    }

    public static func < (lhs: RaceRow, rhs: RaceRow) -> Bool { lhs.order < rhs.order }
}

/// Why a zone's claim stopped being shown.
public enum ClaimEnd: String, Hashable, Sendable, CaseIterable {
    /// Its TTL ran out with no newer frame.
    case expired
    /// A newer frame from the same beacon claimed another mode.
    case replaced
    /// A frame with TTL 0 cleared it; it stayed for the de-escalation hold.
    case cleared
    /// A newer frame lowered it; it stayed for the de-escalation hold.
    case deescalated
    /// A more severe claim from another beacon in the zone took over.
    case outranked
    /// An older-sequence frame from the same address asserted more: the contested claim took over.
    case contested
    /// The override table was full and dropped it for a more severe claim.
    case evicted
    /// A reload's settings (zones, allow list, RSSI, distance, signing) no longer admitted it.
    case reconfigured
    /// Still in force when the recording ended.
    case recordingEnded = "recording_ended"
}

/// One stretch of a row: a time span with one mode, and the details behind it.
public struct RaceStretch: Hashable, Sendable {
    public var row: RaceRow
    /// Engine time, µs; `end` is exclusive.
    public var start: Int64
    public var end: Int64
    /// nil: unknown (no decision, or race control's mode was not one beacond knows).
    public var mode: TrackMode?
    public var detail: Detail

    public init(row: RaceRow, start: Int64, end: Int64, mode: TrackMode?, detail: Detail) {
        self.row = row
        self.start = start
        self.end = end
        self.mode = mode
        self.detail = detail
    }

    public enum Detail: Hashable, Sendable {
        case claim(ClaimDetail)
        case published(PublishedDetail)
        case raceControl(RaceControlDetail)
    }
}

/// A zone stretch: the beacon whose claim began it, and how it went.
public struct ClaimDetail: Hashable, Sendable {
    public var key: OverrideKey
    public var version: UInt8
    public var sequence: UInt16
    /// The frame's TTL, seconds.
    public var ttl: UInt8
    public var rssi: Int8?
    public var signed: Bool
    /// The sequence of the last frame behind the stretch (several when the beacon repeated it).
    public var lastSequence: UInt16
    /// Distinct beacons (override keys) that claimed this mode in this zone during the stretch.
    public var beacons: Int
    /// An older-sequence claim contested the claim in force at some point during the stretch.
    public var contested: Bool
    /// From when the stretch was shown only by a held claim (the de-escalation hold).
    public var heldFrom: Int64?
    public var end: ClaimEnd

    public init(
        key: OverrideKey, version: UInt8, sequence: UInt16, ttl: UInt8, rssi: Int8?, signed: Bool,
        lastSequence: UInt16, beacons: Int = 1, contested: Bool = false, heldFrom: Int64? = nil,
        end: ClaimEnd = .recordingEnded
    ) {
        self.key = key
        self.version = version
        self.sequence = sequence
        self.ttl = ttl
        self.rssi = rssi
        self.signed = signed
        self.lastSequence = lastSequence
        self.beacons = beacons
        self.contested = contested
        self.heldFrom = heldFrom
        self.end = end
    }

    init(_ leader: ActiveOverride) {
        self.init(
            key: leader.key, version: leader.signal.version.rawValue, sequence: leader.sequence,
            ttl: leader.signal.ttl, rssi: leader.rssi, signed: leader.signal.isSigned,
            lastSequence: leader.sequence, contested: leader.isContested)
    }
}

/// A stretch of what the screens showed: `replay --timeline`'s line that began it.
public struct PublishedDetail: Hashable, Sendable {
    public var source: StateSource
    public var zone: UInt16?
    public var address: BluetoothAddress?
    public var sequence: UInt16?
    public var signed: Bool
    public var message: String?

    public init(
        source: StateSource, zone: UInt16? = nil, address: BluetoothAddress? = nil, sequence: UInt16? = nil,
        signed: Bool = false, message: String? = nil
    ) {
        self.source = source
        self.zone = zone
        self.address = address
        self.sequence = sequence
        self.signed = signed
        self.message = message
    }
}

/// A stretch of race control's state: its mode, and whether it was fresh.
public struct RaceControlDetail: Hashable, Sendable {
    /// Fetched within `remote.stale_after`, or a latched evacuation.
    public var fresh: Bool
    public var latched: Bool
    public var message: String?
    /// Failed fetches during the stretch, and the last one's reason.
    public var failures: Int
    public var lastFailure: String?

    public init(fresh: Bool, latched: Bool, message: String?, failures: Int = 0, lastFailure: String? = nil) {
        self.fresh = fresh
        self.latched = latched
        self.message = message
        self.failures = failures
        self.lastFailure = lastFailure
    }
}
