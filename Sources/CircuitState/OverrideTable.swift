import BLEPayload

/// The keys with claims in force, bounded in size.
///
/// Each entry ranks, links and is evicted by the claim it publishes. Entries of each severity are
/// linked from least to most recently accepted, so the eviction victim is found in constant time;
/// each entry's next claim expiry sits in a heap, so the next deadline is too. Every operation
/// keeps the heap's first mark current, so `nextExpiry` needs no mutation.
struct OverrideTable {
    struct Entry {
        var key: OverrideKey
        var claims: ClaimSet
        /// The claim the key publishes, as of its last change.
        var published: Claim
        /// The last advertised TX power any accepted report carried.
        var txPower: Int8?
        var window: RSSIWindow
        var revision: UInt64
        var lessRecent: Int?
        var moreRecent: Int?

        var mode: TrackMode { published.mode }
        var signal: GeoRacingSignal { published.signal }
        var rssi: Int8? { published.rssi }

        var rank: OverrideRank { OverrideRank(mode: mode, rssi: rssi, signal: signal, address: key.address) }

        /// Applies `change` to the claims in place, drops what lapsed at `now`, and takes the claim
        /// to publish; nil (and the entry unchanged otherwise) when no claim is left.
        mutating func change(
            at now: Int64, rssi: Int8?, txPower: Int8?, revision: UInt64, _ change: (inout ClaimSet) -> Void
        ) -> Claim? {
            change(&claims)
            claims.removeExpired(at: now)
            guard let next = claims.published(at: now) else { return nil }
            published = next
            if let txPower { self.txPower = txPower }
            if let rssi { window.append(rssi) }
            self.revision = revision
            return next
        }
    }

    private struct RecencyList {
        var oldest: Int?
        var newest: Int?
    }

    private var slots: [Entry?] = []
    /// Each slot's entry revision (0 for a free slot), apart from the entries so that checking an
    /// expiry mark never copies an entry.
    private var revisions: [UInt64] = []
    private var freeSlots: [Int] = []
    private var slotByKey: [OverrideKey: Int] = [:]
    private var recency = Array(repeating: RecencyList(), count: TrackMode.allCases.count)
    /// Entries publishing a signed claim, by severity: a signed entry takes the lead from a
    /// sticky unsigned one of its severity without a scan of the list when there is none.
    private var signedCounts = Array(repeating: 0, count: TrackMode.allCases.count)
    private var expiries = MinHeap<ExpiryMark>()
    private var lastRevision: UInt64 = 0

    var count: Int { slotByKey.count }

    var entries: [Entry] { slots.compactMap { $0 } }

    func entry(for key: OverrideKey) -> Entry? {
        guard let slot = slotByKey[key] else { return nil }
        return slots[slot]
    }

    func contains(_ key: OverrideKey) -> Bool { slotByKey[key] != nil }

    /// The claim in force of `key`, read without copying its entry.
    func claimInForce(for key: OverrideKey) -> Claim? {
        guard let slot = slotByKey[key] else { return nil }
        return read(slot) { $0.claims.inForce } ?? nil
    }

    /// Each entry that publishes a claim at `time`, as the rank of that claim and its slot, read in
    /// place: what a listing orders by, without snapshotting (or copying) a single entry.
    func rankedSlots(at time: Int64) -> [(rank: OverrideRank, slot: Int)] {
        var ranked: [(rank: OverrideRank, slot: Int)] = []
        ranked.reserveCapacity(count)
        for slot in slots.indices {
            let rank = read(slot) { entry in
                entry.claims.published(at: time).map {
                    OverrideRank(mode: $0.mode, rssi: $0.rssi, signal: $0.signal, address: entry.key.address)
                }
            }
            if let rank = rank ?? nil { ranked.append((rank, slot)) }
        }
        return ranked
    }

    /// The entry in `slot`, if the slot holds one.
    func entry(inSlot slot: Int) -> Entry? {
        slots.indices.contains(slot) ? slots[slot] : nil
    }

    /// Reads a field of the entry in `slot` in place: the array's getter would copy the entry.
    @inline(__always)
    private func read<Value>(_ slot: Int, _ field: (borrowing Entry) -> Value) -> Value? {
        slots.withUnsafeBufferPointer { buffer in
            guard buffer.indices.contains(slot) else { return nil }
            switch buffer[slot] {
            case .some(let entry): return field(entry)
            case .none: return nil
            }
        }
    }

    var topSeverity: Int? { recency.indices.last { recency[$0].oldest != nil } }

    /// What evaluation needs of the best entry, read without copying it.
    struct Leader {
        var key: OverrideKey
        var mode: TrackMode
        /// The zone a published state names: nil for a command frame, which is circuit-wide.
        var zone: UInt16?
        var revision: UInt64
    }

    /// The winner among the most severe entries: `preferred` when it is one of them (unless it is
    /// unsigned and a signed one is among them), else the best ranked.
    func leader(preferring preferred: OverrideKey?) -> Leader? {
        guard let top = topSeverity else { return nil }
        var slot: Int?
        if let preferred, let preferredSlot = slotByKey[preferred],
            let (severity, signed) = read(preferredSlot, { ($0.mode.severity, $0.signal.isSigned) }), severity == top,
            signed || signedCounts[top] == 0
        {
            slot = preferredSlot
        } else {
            var bestRank: OverrideRank?
            var cursor = recency[top].oldest
            while let candidate = cursor, let (rank, next) = read(candidate, { ($0.rank, $0.moreRecent) }) {
                if bestRank.map({ rank < $0 }) ?? true {
                    slot = candidate
                    bestRank = rank
                }
                cursor = next
            }
        }
        return slot.flatMap { slot in
            read(slot) { entry in
                let zone = entry.signal.version == .command ? nil : entry.signal.zone
                return Leader(key: entry.key, mode: entry.mode, zone: zone, revision: entry.revision)
            }
        }
    }

    /// The earliest claim expiry strictly after `now`.
    func nextExpiry(after now: Int64) -> Int64? {
        if let first = expiries.first, first.expiresAt > now { return first.expiresAt }
        return slots.lazy.compactMap { $0?.claims.nextExpiry }.filter { $0 > now }.min()
    }

    /// The key to evict so that an entry of `severity` fits: the least recently accepted of the
    /// least severe entries. Nil when that entry is of the top severity (the newcomer's included)
    /// or more severe than the newcomer.
    func evictionCandidate(forSeverity severity: Int) -> OverrideKey? {
        let top = max(topSeverity ?? severity, severity)
        for level in 0..<top {
            guard let oldest = recency[level].oldest else { continue }
            guard level <= severity else { return nil }
            return slots[oldest]?.key
        }
        return nil
    }

    /// Changes the claims of `key` (a new entry when it has none) for a frame accepted or
    /// contested at `now`; the entry becomes the most recent of the severity it publishes. An
    /// entry left with no claim in force at `now` goes.
    mutating func update(
        _ key: OverrideKey, at now: Int64, rssi: Int8?, txPower: Int8?, _ change: (inout ClaimSet) -> Void
    ) {
        lastRevision += 1
        if let slot = slotByKey[key],
            let (severity, signed) = read(slot, { ($0.published.severity, $0.signal.isSigned) })
        {
            // In place: copying the entry would copy its claims.
            let published = slots[slot]?.change(at: now, rssi: rssi, txPower: txPower, revision: lastRevision, change)
            if published != nil { revisions[slot] = lastRevision }
            if let published {
                countSigned(signed, severity: severity, by: -1)
                countSigned(published.signal.isSigned, severity: published.severity, by: 1)
                if published.severity != severity {
                    unlink(slot, severity: severity)
                    link(slot, severity: published.severity)
                } else {
                    moveToNewest(slot, severity: severity)
                }
                markNextExpiry(of: slot)
            } else {
                removeSlot(slot)
            }
            tidyExpiries()
            return
        }
        var claims = ClaimSet()
        change(&claims)
        claims.removeExpired(at: now)
        guard let published = claims.published(at: now) else { return }
        var window = RSSIWindow()
        if let rssi { window.append(rssi) }
        let entry = Entry(
            key: key, claims: claims, published: published, txPower: txPower, window: window, revision: lastRevision)
        let slot: Int
        if let free = freeSlots.popLast() {
            slot = free
            slots[slot] = entry
            revisions[slot] = lastRevision
        } else {
            slot = slots.count
            slots.append(entry)
            revisions.append(lastRevision)
        }
        slotByKey[key] = slot
        countSigned(published.signal.isSigned, severity: published.severity, by: 1)
        link(slot, severity: published.severity)
        markNextExpiry(of: slot)
        tidyExpiries()
    }

    mutating func remove(_ key: OverrideKey) {
        guard let slot = slotByKey[key] else { return }
        removeSlot(slot)
        tidyExpiries()
    }

    /// Drops the claims that lapse at or before `now`, and the entries left with none; returns how
    /// many entries went. An entry whose published claim changes severity is relinked by it.
    mutating func removeExpired(at now: Int64) -> Int {
        var removed = 0
        while let mark = expiries.first, mark.expiresAt <= now {
            _ = expiries.removeFirst()
            guard isCurrent(mark), var entry = slots[mark.slot] else { continue }
            entry.claims.removeExpired(at: now)
            guard let published = entry.claims.published(at: now) else {
                removeSlot(mark.slot)
                removed += 1
                continue
            }
            lastRevision += 1
            countSigned(entry.signal.isSigned, severity: entry.published.severity, by: -1)
            countSigned(published.signal.isSigned, severity: published.severity, by: 1)
            let severityChanged = published.severity != entry.published.severity
            if severityChanged { unlink(mark.slot, severity: entry.published.severity) }
            entry.published = published
            entry.revision = lastRevision
            slots[mark.slot] = entry
            revisions[mark.slot] = lastRevision
            if severityChanged { link(mark.slot, severity: published.severity) }
            markNextExpiry(of: mark.slot)
        }
        tidyExpiries()
        return removed
    }

    /// Keeps the claims `keep` admits, with expiries recomputed by `expiry`; returns how many
    /// entries `keep` left without a claim. Claims whose new expiry has passed go at the next
    /// `removeExpired`.
    mutating func reviseClaims(keep: (OverrideKey, Claim) -> Bool, expiry: (Claim) -> Int64) -> Int {
        var dropped = 0
        for slot in slots.indices {
            guard var entry = slots[slot] else { continue }
            let key = entry.key
            entry.claims.revise { claim in keep(key, claim) ? expiry(claim) : nil }
            guard let published = entry.claims.published(at: .min) else {
                removeSlot(slot)
                dropped += 1
                continue
            }
            lastRevision += 1
            unlink(slot, severity: entry.published.severity)
            countSigned(entry.signal.isSigned, severity: entry.published.severity, by: -1)
            countSigned(published.signal.isSigned, severity: published.severity, by: 1)
            entry.published = published
            entry.revision = lastRevision
            slots[slot] = entry
            revisions[slot] = lastRevision
            link(slot, severity: published.severity)
        }
        rebuildExpiries()
        return dropped
    }

    /// Evicts the least severe, least recently accepted entries until at most `limit` remain;
    /// returns how many went.
    mutating func shrink(to limit: Int) -> Int {
        var evicted = 0
        while count > limit, let level = recency.firstIndex(where: { $0.oldest != nil }),
            let oldest = recency[level].oldest
        {
            removeSlot(oldest)
            evicted += 1
        }
        tidyExpiries()
        return evicted
    }

    private func isCurrent(_ mark: ExpiryMark) -> Bool {
        revisions.indices.contains(mark.slot) && revisions[mark.slot] == mark.revision
    }

    private mutating func markNextExpiry(of slot: Int) {
        guard let next = read(slot, { $0.claims.nextExpiry }) ?? nil else { return }
        expiries.insert(ExpiryMark(expiresAt: next, slot: slot, revision: revisions[slot]))
    }

    private mutating func removeSlot(_ slot: Int) {
        guard let entry = slots[slot] else { return }
        unlink(slot, severity: entry.mode.severity)
        countSigned(entry.signal.isSigned, severity: entry.mode.severity, by: -1)
        slotByKey[entry.key] = nil
        slots[slot] = nil
        revisions[slot] = 0
        freeSlots.append(slot)
    }

    private mutating func rebuildExpiries() {
        expiries.rebuild(
            slots.indices.compactMap { slot in
                slots[slot].flatMap { entry in
                    entry.claims.nextExpiry.map {
                        ExpiryMark(expiresAt: $0, slot: slot, revision: entry.revision)
                    }
                }
            })
    }

    /// Drops superseded marks from the front, and rebuilds the heap once they outnumber the entries.
    private mutating func tidyExpiries() {
        if expiries.count > 2 * count + 64 { rebuildExpiries() }
        while let mark = expiries.first, !isCurrent(mark) {
            _ = expiries.removeFirst()
        }
    }

    private mutating func countSigned(_ signed: Bool, severity: Int, by delta: Int) {
        if signed { signedCounts[severity] += delta }
    }

    /// Makes `slot` the most recent of its severity.
    private mutating func moveToNewest(_ slot: Int, severity: Int) {
        guard recency[severity].newest != slot else { return }
        unlink(slot, severity: severity)
        link(slot, severity: severity)
    }

    private mutating func link(_ slot: Int, severity: Int) {
        let previousNewest = recency[severity].newest
        slots[slot]?.lessRecent = previousNewest
        slots[slot]?.moreRecent = nil
        if let previousNewest {
            slots[previousNewest]?.moreRecent = slot
        } else {
            recency[severity].oldest = slot
        }
        recency[severity].newest = slot
    }

    private mutating func unlink(_ slot: Int, severity: Int) {
        guard let entry = slots[slot] else { return }
        if let lessRecent = entry.lessRecent {
            slots[lessRecent]?.moreRecent = entry.moreRecent
        } else {
            recency[severity].oldest = entry.moreRecent
        }
        if let moreRecent = entry.moreRecent {
            slots[moreRecent]?.lessRecent = entry.lessRecent
        } else {
            recency[severity].newest = entry.lessRecent
        }
    }
}

/// When an entry's next claim expires, as the table's heap holds it: marks are never updated in
/// place; a newer mark supersedes an older one for the same entry, and the table skips marks whose
/// revision is stale.
struct ExpiryMark: HeapOrdered, Sendable {
    var expiresAt: Int64
    var slot: Int
    var revision: UInt64

    func precedes(_ other: ExpiryMark) -> Bool {
        expiresAt != other.expiresAt ? expiresAt < other.expiresAt : revision < other.revision
    }
}
