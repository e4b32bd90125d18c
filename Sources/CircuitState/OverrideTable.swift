import BLEPayload

/// The active overrides, one per key, bounded in size.
///
/// Entries of each severity are linked from least to most recently accepted, so the eviction
/// victim is found in constant time; expiry instants sit in a heap, so the next deadline is too.
/// Every operation keeps the heap's first mark current, so `nextExpiry` needs no mutation.
struct OverrideTable {
    struct Entry {
        var key: OverrideKey
        var mode: TrackMode
        var signal: GeoRacingSignal
        var rssi: Int8?
        /// The last advertised TX power any accepted report carried.
        var txPower: Int8?
        var window: RSSIWindow
        var receivedAt: Int64
        var expiresAt: Int64
        var revision: UInt64
        var lessRecent: Int?
        var moreRecent: Int?

        var rank: OverrideRank { OverrideRank(mode: mode, rssi: rssi, signal: signal, address: key.address) }
    }

    private struct RecencyList {
        var oldest: Int?
        var newest: Int?
    }

    private var slots: [Entry?] = []
    private var freeSlots: [Int] = []
    private var slotByKey: [OverrideKey: Int] = [:]
    private var recency = Array(repeating: RecencyList(), count: TrackMode.allCases.count)
    private var expiries = ExpiryQueue()
    private var lastRevision: UInt64 = 0

    var count: Int { slotByKey.count }

    var entries: [Entry] { slots.compactMap { $0 } }

    func entry(for key: OverrideKey) -> Entry? {
        guard let slot = slotByKey[key] else { return nil }
        return slots[slot]
    }

    var topSeverity: Int? { recency.indices.last { recency[$0].oldest != nil } }

    /// The winner among the most severe entries: `preferred` when it is one of them, else the best ranked.
    func best(preferring preferred: OverrideKey?) -> Entry? {
        guard let top = topSeverity else { return nil }
        if let preferred, let entry = entry(for: preferred), entry.mode.severity == top { return entry }
        var best: Entry?
        var cursor = recency[top].oldest
        while let slot = cursor, let entry = slots[slot] {
            if let current = best {
                if entry.rank < current.rank { best = entry }
            } else {
                best = entry
            }
            cursor = entry.moreRecent
        }
        return best
    }

    /// The earliest expiry strictly after `now`.
    func nextExpiry(after now: Int64) -> Int64? {
        if let first = expiries.first, first.expiresAt > now { return first.expiresAt }
        return slots.lazy.compactMap { $0?.expiresAt }.filter { $0 > now }.min()
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

    /// Inserts or replaces the entry for `key`; it becomes the most recent of its severity.
    mutating func store(
        _ key: OverrideKey, mode: TrackMode, signal: GeoRacingSignal, rssi: Int8?, txPower: Int8?,
        receivedAt: Int64, expiresAt: Int64
    ) {
        lastRevision += 1
        let slot: Int
        if let existing = slotByKey[key], var entry = slots[existing] {
            slot = existing
            unlink(slot, severity: entry.mode.severity)
            entry.mode = mode
            entry.signal = signal
            entry.rssi = rssi
            entry.txPower = txPower ?? entry.txPower
            if let rssi { entry.window.append(rssi) }
            entry.receivedAt = receivedAt
            entry.expiresAt = expiresAt
            entry.revision = lastRevision
            slots[slot] = entry
        } else {
            var window = RSSIWindow()
            if let rssi { window.append(rssi) }
            let entry = Entry(
                key: key, mode: mode, signal: signal, rssi: rssi, txPower: txPower, window: window,
                receivedAt: receivedAt, expiresAt: expiresAt, revision: lastRevision)
            if let free = freeSlots.popLast() {
                slot = free
                slots[slot] = entry
            } else {
                slot = slots.count
                slots.append(entry)
            }
            slotByKey[key] = slot
        }
        link(slot, severity: mode.severity)
        expiries.insert(ExpiryQueue.Mark(expiresAt: expiresAt, slot: slot, revision: lastRevision))
        tidyExpiries()
    }

    mutating func remove(_ key: OverrideKey) {
        guard let slot = slotByKey[key] else { return }
        removeSlot(slot)
        tidyExpiries()
    }

    /// Removes the entries that expire at or before `now`; returns how many.
    mutating func removeExpired(at now: Int64) -> Int {
        var removed = 0
        while let mark = expiries.first, mark.expiresAt <= now {
            _ = expiries.removeFirst()
            if isCurrent(mark) {
                removeSlot(mark.slot)
                removed += 1
            }
        }
        tidyExpiries()
        return removed
    }

    /// Removes the entries `shouldRemove` picks; returns how many.
    mutating func removeAll(where shouldRemove: (Entry) -> Bool) -> Int {
        let doomed = entries.filter(shouldRemove).map(\.key)
        for key in doomed { remove(key) }
        return doomed.count
    }

    /// Evicts the least severe, least recently accepted entries until at most `limit` remain;
    /// returns how many went.
    mutating func shrink(to limit: Int) -> Int {
        var evicted = 0
        while count > limit, let level = recency.firstIndex(where: { $0.oldest != nil }),
              let oldest = recency[level].oldest {
            removeSlot(oldest)
            evicted += 1
        }
        tidyExpiries()
        return evicted
    }

    /// Sets every entry's expiry to `expiry(entry)`.
    mutating func recomputeExpiries(_ expiry: (Entry) -> Int64) {
        var marks: [ExpiryQueue.Mark] = []
        for slot in slots.indices {
            guard var entry = slots[slot] else { continue }
            lastRevision += 1
            entry.expiresAt = expiry(entry)
            entry.revision = lastRevision
            slots[slot] = entry
            marks.append(ExpiryQueue.Mark(expiresAt: entry.expiresAt, slot: slot, revision: entry.revision))
        }
        expiries.rebuild(marks)
    }

    private func isCurrent(_ mark: ExpiryQueue.Mark) -> Bool {
        slots.indices.contains(mark.slot) && slots[mark.slot]?.revision == mark.revision
    }

    private mutating func removeSlot(_ slot: Int) {
        guard let entry = slots[slot] else { return }
        unlink(slot, severity: entry.mode.severity)
        slotByKey[entry.key] = nil
        slots[slot] = nil
        freeSlots.append(slot)
    }

    /// Drops superseded marks from the front, and rebuilds the heap once they outnumber the entries.
    private mutating func tidyExpiries() {
        if expiries.count > 2 * count + 64 {
            expiries.rebuild(slots.indices.compactMap { slot in
                slots[slot].map { ExpiryQueue.Mark(expiresAt: $0.expiresAt, slot: slot, revision: $0.revision) }
            })
        }
        while let mark = expiries.first, !isCurrent(mark) {
            _ = expiries.removeFirst()
        }
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
