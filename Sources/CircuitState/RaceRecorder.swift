/// Follows a `FusionEngine` through a race and keeps it as stretches: per zone, the mode its
/// beacons claimed (the zone's best claim, by the engine's own order) and why each claim ended;
/// what the screens showed (one stretch per `replay --timeline` line); race control's state,
/// fresh or stale.
///
/// Feed it every evaluation with the engine beside it (`TimelineDriver`'s observers) and, before
/// that, every report the engine ingested (`ingested`). It reads only those reports' keys, except
/// a beacon's steady repeats (most of a day's reports), and a key again when its claim's expiry
/// has passed.
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
    /// When to read each stored key again (`mark`), earliest first.
    private var expiries = MinHeap<KeyDeadline>()
    private var expiryMarks: [OverrideKey: Int64] = [:]
    private var touched: [OverrideKey] = []
    /// The zones an evaluation must look at again; kept to reuse its storage.
    private var changedZones: [UInt16] = []
    /// The keys the engine evicted since the last evaluation (from its eviction log).
    private var evictedNow: [OverrideKey] = []
    /// `FusionEngine.evictions.total` at the last evaluation.
    private var evictionsSeen = 0
    /// Why claims the engine dropped outside `ingest` and expiry since the last evaluation ended.
    private var droppedNowEnd: ClaimEnd?
    private var remoteFailureSeen: Int64?

    public init(limit: Int = 1_000_000, byteLimit: Int = 256 << 20) {
        self.limit = max(1, limit)
        self.byteLimit = max(1, byteLimit)
    }

    /// The engine ingested a report of `key`: read its override at the next evaluation, unless the
    /// report was a steady repeat (`.refreshed`: the same claim, its expiry no earlier), which
    /// shows nothing new; the key's expiry mark catches up with the later expiry.
    public mutating func ingested(_ key: OverrideKey, outcome: IngestOutcome) {
        guard outcome != .refreshed else { return }
        touched.append(key)
    }

    /// The engine dropped or revised claims outside `ingest` and expiry: a reconfiguration
    /// (`.reconfigured`: claims dropped, expiries recomputed) or a replay pass starting again
    /// (`.recordingEnded`: every claim forgotten). Every key is read at the next evaluation, and a
    /// claim gone before its expiry ends by `reason`.
    public mutating func engineRevised(endingDroppedClaimsAs reason: ClaimEnd) {
        touched.append(contentsOf: overrides.keys)
        droppedNowEnd = reason
    }

    /// One evaluation, with the engine right after it.
    public mutating func observe(_ state: PublishedState, engine: FusionEngine) {
        let time = state.time
        if firstTime == nil { firstTime = time }
        lastTime = time
        var zones = changedZones
        changedZones = []
        zones.removeAll(keepingCapacity: true)
        for (index, key) in touched.enumerated() where index == 0 || touched[index - 1] != key {
            read(key, engine: engine, at: time, zones: &zones)
        }
        touched.removeAll(keepingCapacity: true)
        if engine.evictions.total != evictionsSeen {
            let logged = engine.evictions.forEachKey(since: evictionsSeen) { key in
                evictedNow.append(key)
                read(key, engine: engine, at: time, zones: &zones)
            }
            if !logged {
                for key in Array(overrides.keys) { read(key, engine: engine, at: time, zones: &zones) }
            }
            evictionsSeen = engine.evictions.total
        }
        while let first = expiries.first, first.time <= time {
            expiries.removeFirst()
            guard expiryMarks[first.key] == first.time else { continue }
            expiryMarks.removeValue(forKey: first.key)
            if let stored = overrides[first.key], stored.expiresAt > time {
                mark(first.key, expiringAt: stored.expiresAt)
            } else {
                read(first.key, engine: engine, at: time, zones: &zones)
            }
        }
        for zone in zones { follow(zone: zone, at: time, engine: engine) }
        changedZones = zones
        evictedNow.removeAll(keepingCapacity: true)
        droppedNowEnd = nil
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

    /// The estimated bytes of the ended stretches kept (what `byteLimit` bounds).
    public var bytes: Int { endedBytes }

    /// One page of the history, for a client that reads it in parts: ended stretches are numbered
    /// from 0 in the order they ended (the `dropped` oldest are gone). The page holds the ones
    /// numbered `after` and later that end at or after `since`, at most `limit`; the last page adds
    /// the stretches still open, ending at the last evaluation.
    public func page(since: Int64, after cursor: Int, limit: Int) -> HistoryPage {
        let kept = ended.count - endedHead
        var number = max(cursor, dropped)
        var stretches: [RaceStretch] = []
        while number < dropped + kept, stretches.count < max(1, limit) {
            let stretch = ended[endedHead + number - dropped]
            if stretch.end >= since { stretches.append(stretch) }
            number += 1
        }
        let more = number < dropped + kept
        if !more {
            for var stretch in open.values.sorted(by: { $0.row < $1.row }) {
                stretch.end = lastTime ?? stretch.start
                stretches.append(stretch)
            }
        }
        return HistoryPage(stretches: stretches, next: number, more: more, skipped: max(0, dropped - cursor))
    }

    // MARK: Zones

    private mutating func read(_ key: OverrideKey, engine: FusionEngine, at time: Int64, zones: inout [UInt16]) {
        let now = engine.activeOverride(for: key, at: time)
        let before = overrides[key]
        if let now, let before, Self.sameClaim(now, before) {
            // A repeat: only the RSSI and the expiry moved. The zone's stretch is unchanged.
            overrides[key] = now
            // The zone's leader keeps its latest expiry (why its stretch ends is judged by it), unless
            // the zone has not yet followed a change of this key.
            if let leader = leaders[now.zone], leader.key == key, Self.sameClaim(leader, now) {
                leaders[now.zone] = now
            }
            if expiryMarks[key].map({ now.expiresAt < $0 }) ?? true { mark(key, expiringAt: now.expiresAt) }
            return
        }
        guard now != before else { return }
        if let before, before.zone != now?.zone {
            zoneKeys[before.zone]?.remove(key)
            if !zones.contains(before.zone) { zones.append(before.zone) }
        }
        if let now {
            overrides[key] = now
            if before?.zone != now.zone { zoneKeys[now.zone, default: []].insert(key) }
            if !zones.contains(now.zone) { zones.append(now.zone) }
            if expiryMarks[key].map({ now.expiresAt < $0 }) ?? true { mark(key, expiringAt: now.expiresAt) }
        } else {
            overrides.removeValue(forKey: key)
            expiryMarks.removeValue(forKey: key)
        }
    }

    /// One mark per stored key, at or before its claim's expiry: when it comes, the key is read
    /// again, or its mark moves to the expiry a repeat has pushed back. A key gains a second, earlier
    /// mark only when a new claim expires sooner; the later one is then stale and skipped.
    private mutating func mark(_ key: OverrideKey, expiringAt time: Int64) {
        expiryMarks[key] = time
        expiries.insert(KeyDeadline(time: time, key: key))
        // Stale entries (keys gone, marks moved earlier) wait for their time; a flood of short-lived
        // keys must not make them pile up: past twice the live marks, the heap keeps only those.
        if expiries.count > 2 * expiryMarks.count + 1024 {
            expiries.rebuild(expiryMarks.map { KeyDeadline(time: $0.value, key: $0.key) })
        }
    }

    private mutating func follow(zone: UInt16, at time: Int64, engine: FusionEngine) {
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
            detail.end = Self.end(
                of: previous, now: overrides[previous.key], at: time, evicted: evictedNow.contains(previous.key),
                dropped: droppedNowEnd)
            stretch.detail = .claim(detail)
            stretch.end = time
            open.removeValue(forKey: row)
            claimants.removeValue(forKey: zone)
            if stretch.start < time { keep(stretch) }
        }
        guard let leader else { return }
        claimants[zone] = Set(keys.filter { overrides[$0]?.mode == leader.mode })
        // The stored reading may predate the claim's steady repeats: its TTL and RSSI are read now.
        var detail = ClaimDetail(engine.activeOverride(for: leader.key, at: time) ?? leader)
        detail.beacons = claimants[zone]?.count ?? 1
        if Self.showsHeldClaim(leader) { detail.heldFrom = time }
        open[row] = RaceStretch(row: row, start: time, end: time, mode: leader.mode, detail: .claim(detail))
    }

    /// Whether two readings of one key show the same claim as far as the stretches go.
    static func sameClaim(_ now: ActiveOverride, _ before: ActiveOverride) -> Bool {
        now.mode == before.mode && now.sequence == before.sequence && now.zone == before.zone
            && now.isContested == before.isContested && showsHeldClaim(now) == showsHeldClaim(before)
    }

    /// Whether the override shows a held claim: one a newer frame lowered or cleared.
    static func showsHeldClaim(_ override: ActiveOverride) -> Bool {
        guard let held = override.heldClaim else { return false }
        return held.mode == override.mode && held.sequence == override.sequence
            && held.receivedAt == override.receivedAt && held.expiresAt == override.expiresAt
    }

    /// Why the claim `previous` showed ended at `time`; `now` is its key's override then. The
    /// stored `previous` may be older than the claim's last steady repeat (those are not read), so
    /// its expiry is only a lower bound: what changed is judged by `now`. `dropped`: why a claim the
    /// engine dropped at `time` outside `ingest` and expiry ended (`engineRevised`).
    static func end(
        of previous: ActiveOverride, now: ActiveOverride?, at time: Int64, evicted: Bool, dropped: ClaimEnd?
    ) -> ClaimEnd {
        if evicted { return .evicted }
        guard let now else {
            // Gone before even its stored expiry: the engine dropped it.
            if let dropped, previous.expiresAt > time { return dropped }
            guard showsHeldClaim(previous) else { return .expired }
            return previous.claimInForce == nil ? .cleared : .deescalated
        }
        if now.mode == previous.mode { return .outranked }
        // The hold ran out and the frame that lowered the claim shows (repeated or not).
        if showsHeldClaim(previous), let lowering = previous.claimInForce, now.sequence == lowering.sequence {
            return .deescalated
        }
        if now.receivedAt == time {
            // A frame at this instant made the key show another claim.
            if let contested = now.contestedClaim, contested.mode == now.mode, contested.receivedAt == now.receivedAt {
                return .contested
            }
            return .replaced
        }
        return showsHeldClaim(previous) ? .deescalated : .expired
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

    /// Ends the row's open stretch where `stretch` begins; one that lasted no time at all (a
    /// daemon's first publication, before any input) was never shown and is not kept.
    private mutating func replaceOpen(_ stretch: RaceStretch) {
        if var previous = open[stretch.row], previous.start < stretch.start {
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

/// One page of a `RaceRecorder`'s history (`RaceRecorder.page`).
public struct HistoryPage: Hashable, Sendable {
    public var stretches: [RaceStretch]
    /// The number to ask for next.
    public var next: Int
    /// Whether ended stretches remain after this page.
    public var more: Bool
    /// Stretches asked for that the bounds had already dropped.
    public var skipped: Int

    public init(stretches: [RaceStretch], next: Int, more: Bool, skipped: Int) {
        self.stretches = stretches
        self.next = next
        self.more = more
        self.skipped = skipped
    }
}

/// When the recorder reads a key again (`RaceRecorder.mark`).
private struct KeyDeadline: HeapOrdered, Sendable {
    var time: Int64
    var key: OverrideKey

    func precedes(_ other: KeyDeadline) -> Bool { time < other.time }
}
