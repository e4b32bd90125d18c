import BLEPayload

/// What identifies one override: its sender's address plus the zone (v1 and v3 circuit beacons)
/// or the staff source id (v2 and v3 staff); a staff command frame's sender alone. A frame only ever competes
/// with frames of its own key.
public enum OverrideKey: Hashable, Sendable, CustomStringConvertible {
    case circuit(zone: UInt16, address: BluetoothAddress)
    case staff(sourceID: UInt32, address: BluetoothAddress)
    case command(address: BluetoothAddress)

    public init(signal: GeoRacingSignal, address: BluetoothAddress) {
        switch signal.version {
        case .v1: self = .circuit(zone: signal.zone, address: address)
        case .v2: self = .staff(sourceID: signal.sourceID ?? 0, address: address)
        case .v3 where signal.signature?.kind == .staff: self = .staff(sourceID: signal.sourceID ?? 0, address: address)
        case .v3: self = .circuit(zone: signal.zone, address: address)
        case .command: self = .command(address: address)
        }
    }

    public var address: BluetoothAddress {
        switch self {
        case .circuit(_, let address), .staff(_, let address), .command(let address): address
        }
    }

    public var description: String {
        switch self {
        case .circuit(let zone, let address): "zone \(zone) @ \(address)"
        case .staff(let sourceID, let address): "source \(sourceID) @ \(address)"
        case .command(let address): "command @ \(address)"
        }
    }
}

/// An override as the table holds it at one instant: the claim its key publishes (the most
/// severe of its claim in force, held claim and contested claim; see docs/fusion.md).
public struct ActiveOverride: Hashable, Sendable {
    public var key: OverrideKey
    public var mode: TrackMode
    /// The frame behind the published claim.
    public var signal: GeoRacingSignal
    /// The RSSI of the report behind the published claim.
    public var rssi: Int8?
    public var smoothedRSSI: Double?
    /// Metres, estimated from the smoothed RSSI; for display and the distance gate only.
    public var distance: Double?
    public var receivedAt: Int64
    /// When the published claim lapses (the key may publish another claim then).
    public var expiresAt: Int64
    /// The latest accepted frame's claim, while in force.
    public var claimInForce: ClaimSummary?
    /// A claim a newer frame lowered or cleared, kept for the de-escalation hold.
    public var heldClaim: ClaimSummary?
    /// An older-sequence claim that contests the claim in force: possible spoofing.
    public var contestedClaim: ClaimSummary?

    public init(
        key: OverrideKey, mode: TrackMode, signal: GeoRacingSignal, rssi: Int8?, smoothedRSSI: Double?,
        distance: Double?, receivedAt: Int64, expiresAt: Int64, claimInForce: ClaimSummary? = nil,
        heldClaim: ClaimSummary? = nil, contestedClaim: ClaimSummary? = nil
    ) {
        self.key = key
        self.mode = mode
        self.signal = signal
        self.rssi = rssi
        self.smoothedRSSI = smoothedRSSI
        self.distance = distance
        self.receivedAt = receivedAt
        self.expiresAt = expiresAt
        self.claimInForce = claimInForce
        self.heldClaim = heldClaim
        self.contestedClaim = contestedClaim
    }

    /// Whether a contested claim is in force: two transmitters disagree on this key.
    public var isContested: Bool { contestedClaim != nil }

    public var address: BluetoothAddress { key.address }
    public var zone: UInt16 { signal.zone }
    public var sequence: UInt16 { signal.sequence }
    public var temperature: UInt8? { signal.temperature }

    /// Whether `self` wins over `other`: higher severity, then signed before unsigned, then stronger
    /// latest RSSI (none is weakest), lower zone, lower version, lower source id, lower address.
    /// Distance never counts.
    public func outranks(_ other: ActiveOverride) -> Bool {
        OverrideRank(self) < OverrideRank(other)
    }
}

/// The tie order as one comparable value: smaller ranks first.
struct OverrideRank: Comparable {
    private let severity: Int
    private let signed: Bool
    private let rssi: Int
    private let zone: UInt16
    private let version: UInt8
    private let sourceID: UInt32
    private let address: UInt64

    init(_ entry: ActiveOverride) {
        self.init(mode: entry.mode, rssi: entry.rssi, signal: entry.signal, address: entry.address)
    }

    init(mode: TrackMode, rssi: Int8?, signal: GeoRacingSignal, address: BluetoothAddress) {
        severity = mode.severity
        signed = signal.isSigned
        self.rssi = rssi.map(Int.init) ?? Int.min
        zone = signal.zone
        version = signal.version.rawValue
        sourceID = signal.sourceID ?? 0
        self.address = address.rawValue
    }

    static func < (lhs: OverrideRank, rhs: OverrideRank) -> Bool {
        if lhs.severity != rhs.severity { return lhs.severity > rhs.severity }
        if lhs.signed != rhs.signed { return lhs.signed }
        if lhs.rssi != rhs.rssi { return lhs.rssi > rhs.rssi }
        if lhs.zone != rhs.zone { return lhs.zone < rhs.zone }
        if lhs.version != rhs.version { return lhs.version < rhs.version }
        if lhs.sourceID != rhs.sourceID { return lhs.sourceID < rhs.sourceID }
        return lhs.address < rhs.address
    }
}
