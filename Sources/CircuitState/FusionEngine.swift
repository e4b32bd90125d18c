import BLEPayload

/// The one state a screen shows, with the details behind it.
public struct PublishedState: Hashable, Sendable {
    /// The engine time this state was evaluated at.
    public var time: Int64
    public var decision: Decision
    /// Whether `decision` differs from the previous evaluation's (always true for the first).
    public var changed: Bool
    /// The best active override, whether or not the policy published it.
    public var override: ActiveOverride?
    /// Nil until the first fetch, successful or not.
    public var remote: RemoteStatus?

    public init(
        time: Int64, decision: Decision, changed: Bool, override: ActiveOverride? = nil, remote: RemoteStatus? = nil
    ) {
        self.time = time
        self.decision = decision
        self.changed = changed
        self.override = override
        self.remote = remote
    }

    public var mode: TrackMode? { decision.mode }
    public var source: StateSource { decision.source }
    public var zone: UInt16? { decision.zone }
}

/// Fuses beacon overrides and the venue API state into one published track mode.
///
/// Time is an injected monotonic clock in microseconds and never runs backwards: an input
/// stamped earlier than the latest time seen is taken to happen at that latest time. Inputs do
/// not publish; a driver applies every input that shares a timestamp, then calls `evaluate(at:)`.
/// Expiry and staleness are events of their own, at the instants `nextDeadline(after:)` gives:
///
///     for each group of inputs sharing timestamp t:
///         publish(engine.evaluateDeadlines(before: t))
///         apply the inputs at t
///         publish(engine.evaluate(at: t))
///     publish(engine.evaluateDeadlines(before: .max))
public struct FusionEngine: Sendable {
    public private(set) var configuration: FusionConfiguration
    public private(set) var counters = FusionCounters()
    /// The keys evicted most recently (`EvictionLog`).
    public private(set) var evictions = EvictionLog()
    /// The latest time seen.
    public private(set) var clock: Int64 = .min
    private var table = OverrideTable()
    private var remote = RemoteFeed()
    private var lastDecision: Decision?
    /// The key of the override last published, kept while it stays among the most severe.
    private var stickyKey: OverrideKey?
    /// The last override snapshot, reused while its entry is unchanged (same revision).
    private var cachedOverride: (revision: UInt64, value: ActiveOverride)?

    public init(configuration: FusionConfiguration = FusionConfiguration()) {
        self.configuration = configuration
    }

    public var overrideCount: Int { table.count }

    /// Offers one GeoRacing report; `rssi` nil means the controller did not report one.
    ///
    /// A v3 signal must have passed `SignedFrameVerifier` (its tag, clock window and order): the
    /// engine trusts its signature. `age` is its age on its sender's clock when heard (the
    /// verifier's), µs: its claim lasts its TTL from its signing, not from its reception.
    @discardableResult
    public mutating func ingest(
        _ signal: GeoRacingSignal, address: BluetoothAddress, rssi: Int8?, txPower: Int8? = nil, age: Int64 = 0,
        at time: Int64
    ) -> IngestOutcome {
        let now = advanceClock(to: time)
        let outcome = offer(signal, address: address, rssi: rssi, txPower: txPower, age: max(0, age), at: now)
        counters.record(outcome)
        return outcome
    }

    public mutating func remoteFetched(_ snapshot: RemoteSnapshot, at time: Int64) {
        let now = advanceClock(to: time)
        remote.recordSuccess(snapshot, at: now)
        counters.remoteSuccesses += 1
    }

    /// Restores the remote state saved before a restart, fetched at `fetchedAt` (engine time:
    /// now minus its true age). It is stale from the start; a latched evacuation is in force at once.
    public mutating func restoreRemote(
        _ snapshot: RemoteSnapshot, fetchedAt: Int64, latchedSnapshot: RemoteSnapshot?, at time: Int64
    ) {
        _ = advanceClock(to: time)
        remote.restore(snapshot, fetchedAt: fetchedAt, latchedSnapshot: latchedSnapshot)
    }

    /// A failed fetch refreshes nothing; it is only remembered for display.
    public mutating func remoteFailed(at time: Int64, reason: String) {
        let now = advanceClock(to: time)
        remote.recordFailure(reason: reason, at: now)
        counters.remoteFailures += 1
    }

    public mutating func evaluate(at time: Int64) -> PublishedState {
        let now = advanceClock(to: time)
        let best = table.leader(preferring: stickyKey)
        let remoteMode = remote.effectiveMode(at: now, staleAfter: configuration.staleAfter)
        let source = configuration.policy.source(beacon: best?.mode, remote: remoteMode)
        let decision =
            switch source {
            case .beacon: Decision(mode: best?.mode, source: .beacon, zone: best?.zone)
            case .remote: Decision(mode: remoteMode, source: .remote, zone: nil)
            case .none: Decision.undecided
            }
        let changed = decision != lastDecision
        lastDecision = decision
        stickyKey = source == .beacon ? best?.key : nil
        return PublishedState(
            time: now, decision: decision, changed: changed, override: cachedSnapshot(of: best),
            remote: remote.status(at: now, staleAfter: configuration.staleAfter))
    }

    /// Evaluates at every pending deadline strictly before `time`, in order.
    public mutating func evaluateDeadlines(before time: Int64) -> [PublishedState] {
        var states: [PublishedState] = []
        while let deadline = nextDeadline(after: clock), deadline < time {
            states.append(evaluate(at: deadline))
        }
        return states
    }

    /// The earliest instant after `time` at which an override expires or the remote state goes stale.
    public func nextDeadline(after time: Int64) -> Int64? {
        let expiry = table.nextExpiry(after: time)
        guard let staleAt = remote.staleAt(staleAfter: configuration.staleAfter), staleAt > time else { return expiry }
        guard let expiry else { return staleAt }
        return min(expiry, staleAt)
    }

    /// The venue API's side at `time` (no earlier than the engine's clock); nil before any fetch.
    public func remoteStatus(at time: Int64) -> RemoteStatus? {
        remote.status(at: max(time, clock), staleAfter: configuration.staleAfter)
    }

    /// The active override of `key` at `time`, if any.
    public func activeOverride(for key: OverrideKey, at time: Int64) -> ActiveOverride? {
        table.entry(for: key).flatMap { snapshot($0, at: max(time, clock)) }
    }

    /// The active overrides at `time`, best first.
    public func activeOverrides(at time: Int64) -> [ActiveOverride] {
        let time = max(time, clock)
        return table.entries.compactMap { snapshot($0, at: time) }.sorted { $0.outranks($1) }
    }

    /// The `limit` best of `activeOverrides(at:)`, in its order, and how many are active in all.
    /// The entries are ranked in place on integers and only the listed ones are snapshot: a status
    /// reply lists 256 of a table of up to 4096 (or more), on the loop that publishes changes.
    public func activeOverrides(at time: Int64, limit: Int) -> (best: [ActiveOverride], activeCount: Int) {
        let time = max(time, clock)
        let ranked = table.rankedSlots(at: time)
        let best = ranked.smallest(limit) { $0.rank < $1.rank }.compactMap { ranked in
            table.entry(inSlot: ranked.slot).flatMap { snapshot($0, at: time) }
        }
        return (best, ranked.count)
    }

    /// Forgets every override (a replay pass starting again), keeping the remote state and counters.
    public mutating func clearOverrides() {
        table = OverrideTable()
        stickyKey = nil
        cachedOverride = nil
    }

    /// Applies a new configuration as if the kept entries had been accepted under it: entries it
    /// would have filtered are dropped, expiries are recomputed with its TTL cap, and the table
    /// shrinks to its bound (least severe and least recently accepted first).
    public mutating func reconfigure(_ configuration: FusionConfiguration) {
        self.configuration = configuration
        cachedOverride = nil
        let distances = Dictionary(
            uniqueKeysWithValues: table.entries.map { entry in
                (
                    entry.key,
                    configuration.distance(
                        smoothedRSSI: entry.window.smoothedRSSI,
                        advertisedTXPower: entry.txPower)
                )
            })
        counters.droppedByReconfiguration += table.reviseClaims(
            keep: { key, claim in
                configuration.rejection(
                    of: claim.signal, address: key.address, rssi: claim.rssi,
                    distance: distances[key] ?? nil) == nil
            },
            expiry: { claim in
                let expiry = claim.lifetimeStart.addingSaturating(configuration.lifetime(ttl: claim.lifetimeTTL))
                guard let heldSince = claim.heldSince else { return expiry }
                return min(expiry, heldSince.addingSaturating(configuration.deescalationHold))
            })
        let shrunk = table.shrink(to: configuration.entryLimit)
        counters.evicted += shrunk
        evictions.recordUnlogged(shrunk)
        counters.expired += table.removeExpired(at: clock)
    }

    private mutating func advanceClock(to time: Int64) -> Int64 {
        if time > clock { clock = time }
        counters.expired += table.removeExpired(at: clock)
        return clock
    }

    private mutating func offer(
        _ signal: GeoRacingSignal, address: BluetoothAddress, rssi: Int8?, txPower: Int8?, age: Int64, at now: Int64
    ) -> IngestOutcome {
        guard let mode = TrackMode(signal.mode) else { return .filtered(.unknownMode) }
        let key = OverrideKey(signal: signal, address: address)
        if let reason = configuration.rejection(
            of: signal, address: address, rssi: rssi, distance: gateDistance(key, rssi: rssi, txPower: txPower))
        {
            return .filtered(reason)
        }
        let lifetime = configuration.lifetime(ttl: signal.ttl)
        let claim = Claim(
            mode: mode, signal: signal, rssi: rssi, receivedAt: now, age: age,
            expiresAt: now.subtractingSaturating(age).addingSaturating(lifetime))
        guard let inForce = table.claimInForce(for: key), inForce.expiresAt > now else {
            // No claim in force: any sequence is accepted; held and contested claims stay.
            guard lifetime > 0 else { return .cleared }
            if !table.contains(key), table.count >= configuration.entryLimit {
                guard let victim = table.evictionCandidate(forSeverity: mode.severity) else { return .refused }
                table.remove(victim)
                counters.evicted += 1
                evictions.record(victim)
            }
            table.update(key, at: now, rssi: rssi, txPower: txPower) { $0.inForce = claim }
            return .inserted
        }
        if !signal.isSigned && inForce.signal.isSigned {
            return offerBelowSigned(key, claim: claim, against: inForce, rssi: rssi, txPower: txPower, at: now)
        }
        let order = ClaimOrder.of(new: signal, current: inForce.signal)
        if order == .older {
            guard lifetime > 0 else { return .ignoredOlder }
            return contest(key, with: claim, against: inForce, rssi: rssi, txPower: txPower, at: now)
        }
        let holdUntil = now.addingSaturating(configuration.deescalationHold)
        guard lifetime > 0 else {
            table.update(key, at: now, rssi: rssi, txPower: txPower) { claims in
                claims.hold(inForce, at: now, until: holdUntil)
                claims.inForce = nil
            }
            return .cleared
        }
        // The replaced claim is held while it still asserts more: a more severe mode, or a flag
        // that would outlast the new claim (a short newer frame must not cut the real one short).
        let replacedAssertsMore =
            inForce.severity > mode.severity
            || (inForce.severity > TrackMode.normal.severity && inForce.expiresAt > claim.expiresAt)
        table.update(key, at: now, rssi: rssi, txPower: txPower) { claims in
            if replacedAssertsMore { claims.hold(inForce, at: now, until: holdUntil) }
            claims.inForce = claim
        }
        guard order == .repeated else { return .replaced }
        let steady =
            claim.mode == inForce.mode && claim.signal.zone == inForce.signal.zone
            && claim.expiresAt >= inForce.expiresAt
        return steady ? .refreshed : .revised
    }

    /// An older-sequence frame with a TTL: it becomes a contested claim when it is more severe
    /// than the claim in force, or when it carries a flag that would outlast the claim in force (so
    /// a short newer claim cannot make the real beacon's flag lapse with it). Contested claims keep
    /// one claim per mode; an equally severe frame takes the place of its mode's claim but never
    /// shortens it.
    private mutating func contest(
        _ key: OverrideKey, with claim: Claim, against inForce: Claim, rssi: Int8?, txPower: Int8?, at now: Int64
    ) -> IngestOutcome {
        let outranks = claim.severity > inForce.severity
        let outlasts = claim.severity > TrackMode.normal.severity && claim.expiresAt > inForce.expiresAt
        guard outranks || outlasts else { return .ignoredOlder }
        var started = false
        table.update(key, at: now, rssi: rssi, txPower: txPower) { claims in
            claims.removeExpired(at: now)
            started = claims.contest(claim)
        }
        return .contested(started: started)
    }

    /// An unsigned frame on a key whose claim in force is signed: it never lowers, clears or
    /// replaces that claim. One asserting more (a more severe mode, or a flag that outlasts it)
    /// contests it, in the fail-safe direction; anything else is ignored.
    private mutating func offerBelowSigned(
        _ key: OverrideKey, claim: Claim, against inForce: Claim, rssi: Int8?, txPower: Int8?, at now: Int64
    ) -> IngestOutcome {
        guard claim.expiresAt > now else { return .belowSigned }
        let outcome = contest(key, with: claim, against: inForce, rssi: rssi, txPower: txPower, at: now)
        return outcome == .ignoredOlder ? .belowSigned : outcome
    }

    /// The distance the gate judges: the key's smoothed estimate including this report.
    private func gateDistance(_ key: OverrideKey, rssi: Int8?, txPower: Int8?) -> Double? {
        guard configuration.maxDistance != nil, let rssi else { return nil }
        let current = table.entry(for: key)
        var window = current?.window ?? RSSIWindow()
        window.append(rssi)
        return configuration.distance(
            smoothedRSSI: window.smoothedRSSI,
            advertisedTXPower: txPower ?? current?.txPower)
    }

    private mutating func cachedSnapshot(of leader: OverrideTable.Leader?) -> ActiveOverride? {
        guard let leader else { return nil }
        if let cachedOverride, cachedOverride.revision == leader.revision { return cachedOverride.value }
        guard let entry = table.entry(for: leader.key), let value = snapshot(entry, at: clock) else { return nil }
        cachedOverride = (leader.revision, value)
        return value
    }

    /// The entry as it stands at `time`: the claim it publishes then, and its claims in force.
    private func snapshot(_ entry: OverrideTable.Entry, at time: Int64) -> ActiveOverride? {
        guard let published = entry.claims.published(at: time) else { return nil }
        let smoothed = entry.window.smoothedRSSI
        let claims = entry.claims
        func inForce(_ claim: Claim?) -> ClaimSummary? {
            claim.flatMap { $0.expiresAt > time ? $0.summary : nil }
        }
        return ActiveOverride(
            key: entry.key, mode: published.mode, signal: published.signal, rssi: published.rssi,
            smoothedRSSI: smoothed,
            distance: configuration.distance(smoothedRSSI: smoothed, advertisedTXPower: entry.txPower),
            receivedAt: published.receivedAt, expiresAt: published.expiresAt,
            claimInForce: inForce(claims.inForce), heldClaim: claims.mostSevereHeld(at: time)?.summary,
            contestedClaim: claims.mostSevereContested(at: time)?.summary)
    }
}
