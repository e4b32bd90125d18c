/// Follows a `FusionEngine` through a race and keeps it as stretches: per zone, the mode its
/// beacons claimed (the zone's best claim, by the engine's own order) and why each claim ended;
/// what the screens showed (one stretch per `replay --timeline` line); race control's state,
/// fresh or stale.
///
/// Feed it every evaluation with the engine beside it (`TimelineDriver`'s observers) and, before
/// that, the key of every report the engine ingested (`touch`). It reads only the touched keys'
/// overrides, and every key's when a claim's expiry has passed, so a day of reports costs a
/// dictionary lookup each.
///
/// Bounded: at most `limit` stretches and `byteLimit` bytes (estimated) are kept; the oldest
/// ended stretches go first and are counted in `dropped`.
public struct RaceRecorder: Sendable {
    public let limit: Int
    public let byteLimit: Int
    public private(set) var dropped = 0
    /// The first and last evaluation times seen.
    public private(set) var firstTime: Int64?
    public private(set) var lastTime: Int64?

    private var ended: [RaceStretch] = []
    private var endedHead = 0
    private var endedBytes = 0
    private var open: [RaceRow: RaceStretch] = [:]
    /// Per zone, the claim shown at the last evaluation (the zone's best override).
    private var leaders: [UInt16: ActiveOverride] = [:]
    /// Every key's override at its last reading, and the keys per zone.
    private var overrides: [OverrideKey: ActiveOverride] = [:]
    private var zoneKeys: [UInt16: Set<OverrideKey>] = [:]
    /// Per open zone stretch, the keys that claimed its mode.
    private var claimants: [UInt16: Set<OverrideKey>] = [:]
    /// No stored override's published claim expires before this.
    private var nextExpiry: Int64 = .max
    private var touched: [OverrideKey] = []
    private var evictionsSeen = 0
    private var remoteFailureSeen: Int64?

    public init(limit: Int = 1_000_000, byteLimit: Int = 256 << 20) {
        self.limit = max(1, limit)
        self.byteLimit = max(1, byteLimit)
    }

    /// The engine ingested a report of `key`: read its override at the next evaluation.
    public mutating func touch(_ key: OverrideKey) {
        touched.append(key)
    }

    /// One evaluation, with the engine right after it.
    public mutating func observe(_ state: PublishedState, engine: FusionEngine) {
        let time = state.time
        if firstTime == nil { firstTime = time }
        lastTime = time
        var zones: Set<UInt16> = []
        for key in touched { read(key, engine: engine, at: time, zones: &zones) }
        touched.removeAll(keepingCapacity: true)
        if time >= nextExpiry || engine.counters.evicted != evictionsSeen {
            evictionsSeen = engine.counters.evicted
            for key in Array(overrides.keys) { read(key, engine: engine, at: time, zones: &zones) }
            nextExpiry = overrides.values.lazy.map(\.expiresAt).min() ?? .max
        }
        for zone in zones { follow(zone: zone, at: time) }
        if state.changed { recordPublished(state) }
        recordRaceControl(state.remote, at: time)
    }

    /// Ends every open stretch at `time` (no earlier than the last evaluation).
    public mutating func finish(at time: Int64) {
        let end = max(time, lastTime ?? time)
        lastTime = end
        for row in open.keys.sorted() {
            guard var stretch = open.removeValue(forKey: row) else { continue }
            stretch.end = end
            keep(stretch)
        }
        leaders = [:]
        claimants = [:]
    }

    /// Every stretch kept, ended or open (open ones end at the last evaluation), by row then start.
    public var stretches: [RaceStretch] {
        var all = Array(ended[endedHead...])
        for var stretch in open.values {
            stretch.end = lastTime ?? stretch.start
            all.append(stretch)
        }
        return all.sorted { ($0.row, $0.start) < ($1.row, $1.start) }
    }

    public var count: Int { ended.count - endedHead + open.count }

    // MARK: Zones

    private mutating func read(_ key: OverrideKey, engine: FusionEngine, at time: Int64, zones: inout Set<UInt16>) {
        let now = engine.activeOverride(for: key, at: time)
        let before = overrides[key]
        guard now != before else { return }
        if let before, before.zone != now?.zone {
            zoneKeys[before.zone]?.remove(key)
            zones.insert(before.zone)
        }
        if let now {
            overrides[key] = now
            zoneKeys[now.zone, default: []].insert(key)
            zones.insert(now.zone)
            nextExpiry = min(nextExpiry, now.expiresAt)
        } else {
            overrides.removeValue(forKey: key)
        }
    }

    private mutating func follow(zone: UInt16, at time: Int64) {
        let keys = zoneKeys[zone] ?? []
        var leader: ActiveOverride?
        for key in keys {
            guard let candidate = overrides[key] else { continue }
            if leader.map({ candidate.outranks($0) }) ?? true { leader = candidate }
        }
        if keys.isEmpty { zoneKeys.removeValue(forKey: zone) }
        let row = RaceRow.zone(zone)
        let previous = leaders[zone]
        leaders[zone] = leader
        if var stretch = open[row], case .claim(var detail) = stretch.detail, let previous {
            if let leader, leader.mode == stretch.mode {
                for key in keys where overrides[key]?.mode == leader.mode { claimants[zone, default: []].insert(key) }
                detail.beacons = claimants[zone]?.count ?? 1
                detail.lastSequence = leader.sequence
                detail.contested = detail.contested || leader.isContested
                if detail.heldFrom == nil, Self.showsHeldClaim(leader) { detail.heldFrom = time }
                stretch.detail = .claim(detail)
                open[row] = stretch
                return
            }
            detail.end = Self.end(of: previous, now: overrides[previous.key], at: time)
            stretch.detail = .claim(detail)
            stretch.end = time
            open.removeValue(forKey: row)
            claimants.removeValue(forKey: zone)
            keep(stretch)
        }
        guard let leader else { return }
        claimants[zone] = Set(keys.filter { overrides[$0]?.mode == leader.mode })
        var detail = ClaimDetail(leader)
        detail.beacons = claimants[zone]?.count ?? 1
        if Self.showsHeldClaim(leader) { detail.heldFrom = time }
        open[row] = RaceStretch(row: row, start: time, end: time, mode: leader.mode, detail: .claim(detail))
    }

    /// Whether the override shows a held claim: one a newer frame lowered or cleared.
    static func showsHeldClaim(_ override: ActiveOverride) -> Bool {
        guard let held = override.heldClaim else { return false }
        return held.mode == override.mode && held.sequence == override.sequence
            && held.receivedAt == override.receivedAt && held.expiresAt == override.expiresAt
    }

    /// Why the claim `previous` showed ended at `time`; `now` is its key's override then.
    static func end(of previous: ActiveOverride, now: ActiveOverride?, at time: Int64) -> ClaimEnd {
        if time >= previous.expiresAt {
            guard showsHeldClaim(previous) else { return .expired }
            return previous.claimInForce == nil ? .cleared : .deescalated
        }
        guard let now else { return .evicted }
        if now.mode == previous.mode { return .outranked }
        if let contested = now.contestedClaim, contested.mode == now.mode, contested.receivedAt == now.receivedAt {
            return .contested
        }
        return .replaced
    }

    // MARK: Published and race control

    private mutating func recordPublished(_ state: PublishedState) {
        var detail = PublishedDetail(source: state.source, zone: state.zone)
        if state.source == .beacon, let override = state.override {
            detail.address = override.address
            detail.sequence = override.sequence
            detail.signed = override.signal.isSigned
        }
        if state.source == .remote { detail.message = state.remote?.message }
        replaceOpen(
            RaceStretch(
                row: .published, start: state.time, end: state.time, mode: state.mode, detail: .published(detail)))
    }

    private mutating func recordRaceControl(_ status: RemoteStatus?, at time: Int64) {
        guard let status else { return }
        let failedNow = status.lastFailureAt != nil && status.lastFailureAt != remoteFailureSeen
        remoteFailureSeen = status.lastFailureAt
        let mode = status.mode ?? status.reportedMode
        let fresh = status.isFresh || status.isLatched
        if var stretch = open[.raceControl], case .raceControl(var detail) = stretch.detail,
            stretch.mode == mode, detail.fresh == fresh, detail.latched == status.isLatched
        {
            if failedNow {
                detail.failures += 1
                detail.lastFailure = status.lastFailureReason
            }
            detail.message = status.message
            stretch.detail = .raceControl(detail)
            open[.raceControl] = stretch
            return
        }
        let detail = RaceControlDetail(
            fresh: fresh, latched: status.isLatched, message: status.message, failures: failedNow ? 1 : 0,
            lastFailure: failedNow ? status.lastFailureReason : nil)
        replaceOpen(RaceStretch(row: .raceControl, start: time, end: time, mode: mode, detail: .raceControl(detail)))
    }

    private mutating func replaceOpen(_ stretch: RaceStretch) {
        if var previous = open[stretch.row] {
            previous.end = stretch.start
            keep(previous)
        }
        open[stretch.row] = stretch
    }

    // MARK: Bounds

    private mutating func keep(_ stretch: RaceStretch) {
        ended.append(stretch)
        endedBytes += Self.estimatedBytes(stretch)
        while ended.count - endedHead > 0, ended.count - endedHead + open.count > limit || endedBytes > byteLimit {
            endedBytes -= Self.estimatedBytes(ended[endedHead])
            endedHead += 1
            dropped += 1
        }
        if endedHead > 1024, endedHead * 2 > ended.count {
            ended.removeFirst(endedHead)
            endedHead = 0
        }
    }

    static func estimatedBytes(_ stretch: RaceStretch) -> Int {
        var bytes = MemoryLayout<RaceStretch>.stride
        switch stretch.detail {
        case .claim: break
        case .published(let detail): bytes += detail.message?.utf8.count ?? 0
        case .raceControl(let detail):
            bytes += (detail.message?.utf8.count ?? 0) + (detail.lastFailure?.utf8.count ?? 0)
        }
        return bytes
    }
}
