import BLEPayload

/// Beacon addresses and v2 staff source ids whose signals may override. Empty admits everything.
public struct AllowList: Hashable, Sendable {
    public var addresses: Set<BluetoothAddress>
    public var sourceIDs: Set<UInt32>

    public init(addresses: Set<BluetoothAddress> = [], sourceIDs: Set<UInt32> = []) {
        self.addresses = addresses
        self.sourceIDs = sourceIDs
    }

    public var isEmpty: Bool { addresses.isEmpty && sourceIDs.isEmpty }

    public func admits(address: BluetoothAddress, sourceID: UInt32?) -> Bool {
        if isEmpty || addresses.contains(address) { return true }
        guard let sourceID else { return false }
        return sourceIDs.contains(sourceID)
    }
}

/// What staff command frames (`[0xFF][command]`) do.
public enum CommandFramePolicy: String, Hashable, Sendable, CaseIterable {
    /// They claim as a v1 frame does, in the fail-safe direction: evacuate is a circuit-wide
    /// evacuation, danger a red flag, each for 30 s and keyed by the sender's address; normal
    /// clears that sender's claim.
    case honour
    /// They are listed (`status.beacons`) but never fused.
    case report
}

/// What unsigned frames (v1, v2, staff commands) count for (`security.unsigned`). Whichever is
/// set, an unsigned frame never lowers or clears a key a signed claim holds (docs/security.md).
public enum UnsignedFramePolicy: String, Hashable, Sendable, CaseIterable {
    /// They claim as they always have.
    case accept
    /// They are listed (`status.beacons`) and counted but never fused.
    case reject
}

/// Everything that tunes the fusion engine. Times are microseconds.
public struct FusionConfiguration: Hashable, Sendable {
    public static let defaultMinRSSI = -90
    public static let defaultMaxTTL: Int64 = 120_000_000
    /// 4096 entries hold every beacon and staff device a venue plausibly has many times over,
    /// and cost a few hundred KiB at most.
    public static let defaultMaxEntries = 4096
    public static let defaultStaleAfter: Int64 = 15_000_000
    /// How long a de-escalated claim stays in force after the frame that lowered it.
    public static let defaultDeescalationHold: Int64 = 1_000_000
    /// The range `deescalationHold` may take, microseconds.
    public static let deescalationHoldRange: ClosedRange<Int64> = 100_000...10_000_000

    public var policy: Policy
    /// dBm; reports weaker than this are ignored. Reports without an RSSI pass.
    public var minRSSI: Int
    /// Zones whose signals may override; empty admits all zones.
    public var zones: Set<UInt16>
    public var allow: AllowList
    /// The longest a signal stays active, whatever TTL it carries.
    public var maxTTL: Int64
    public var maxEntries: Int
    /// How long a successful venue API fetch stays fresh.
    public var staleAfter: Int64
    /// Metres; nil turns the distance gate off.
    public var maxDistance: Double?
    public var pathLossExponent: Double
    /// Received power at 1 m, dBm (`fusion.p1m_dbm`), used for every beacon when set; nil derives
    /// it from a plausible advertised TX power, else −59 dBm.
    public var referencePower: Double?
    /// How long a de-escalated claim stays in force after the frame that lowered or cleared it.
    public var deescalationHold: Int64
    /// What staff command frames do (`fusion.command_frames`).
    public var commandFrames: CommandFramePolicy
    /// What unsigned frames count for (`security.unsigned`).
    public var unsignedFrames: UnsignedFramePolicy

    public init(
        policy: Policy = .safety, minRSSI: Int = defaultMinRSSI, zones: Set<UInt16> = [],
        allow: AllowList = AllowList(),
        maxTTL: Int64 = defaultMaxTTL, maxEntries: Int = defaultMaxEntries, staleAfter: Int64 = defaultStaleAfter,
        maxDistance: Double? = nil, pathLossExponent: Double = RSSIRanging.defaultPathLossExponent,
        referencePower: Double? = nil, deescalationHold: Int64 = defaultDeescalationHold,
        commandFrames: CommandFramePolicy = .honour, unsignedFrames: UnsignedFramePolicy = .accept
    ) {
        self.commandFrames = commandFrames
        self.unsignedFrames = unsignedFrames
        self.policy = policy
        self.minRSSI = minRSSI
        self.zones = zones
        self.allow = allow
        self.maxTTL = maxTTL
        self.maxEntries = maxEntries
        self.staleAfter = staleAfter
        self.maxDistance = maxDistance
        self.pathLossExponent = pathLossExponent
        self.referencePower = referencePower
        self.deescalationHold = deescalationHold
    }

    /// Why a known-mode signal is not an override candidate; nil when it is one.
    func rejection(of signal: GeoRacingSignal, address: BluetoothAddress, rssi: Int8?, distance: Double?)
        -> IngestFilter?
    {
        if !signal.isSigned && unsignedFrames == .reject { return .unsigned }
        let isCommand = signal.version == .command
        if isCommand && commandFrames == .report { return .reportOnly }
        if let rssi, Int(rssi) < minRSSI { return .rssi }
        // A command frame names no zone: it is circuit-wide, whatever zones the screen shows.
        if !isCommand && !zones.isEmpty && !zones.contains(signal.zone) { return .zone }
        if !allow.admits(address: address, sourceID: signal.sourceID) { return .allow }
        if let maxDistance, let distance, distance > maxDistance { return .distance }
        return nil
    }

    /// `maxEntries`, at least one.
    var entryLimit: Int { max(maxEntries, 1) }

    /// How long a signal with `ttl` seconds stays active; zero or less clears its key.
    func lifetime(ttl: UInt8) -> Int64 { min(Int64(ttl) * 1_000_000, maxTTL) }

    public func distance(smoothedRSSI: Double?, advertisedTXPower: Int8?) -> Double? {
        guard let smoothedRSSI else { return nil }
        let reference = RSSIRanging.referencePower(configured: referencePower, advertisedTXPower: advertisedTXPower)
        return RSSIRanging.distance(rssi: smoothedRSSI, referencePower: reference, pathLossExponent: pathLossExponent)
    }
}

/// Saturating arithmetic for times and counts from outside (a capture, the broker, a socket): a result
/// that does not fit stops at the end instead of trapping. Shared with BeacondCore's clients.
extension Int64 {
    package func addingSaturating(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        if overflow { return other > 0 ? .max : .min }
        return sum
    }

    /// Capture time may sit anywhere in Int64: a difference that does not fit stops at the end.
    package func subtractingSaturating(_ other: Int64) -> Int64 {
        let (difference, overflow) = subtractingReportingOverflow(other)
        if overflow { return other < 0 ? .max : .min }
        return difference
    }
}
