/// The keys the override table evicted most recently, for a recorder that follows each key's claim
/// (`RaceRecorder`) without reading every key after each eviction. A ring of fixed size: it
/// allocates once, on the first eviction.
public struct EvictionLog: Sendable {
    static let capacity = 64

    /// Evictions so far, logged or not.
    public private(set) var total = 0
    /// Evictions up to this count were not logged (a reconfiguration shrinking the table).
    private var unloggedThrough = 0
    private var ring: [OverrideKey] = []

    mutating func record(_ key: OverrideKey) {
        if ring.count < Self.capacity {
            ring.append(key)
        } else {
            ring[total % Self.capacity] = key
        }
        total += 1
    }

    mutating func recordUnlogged(_ count: Int) {
        guard count > 0 else { return }
        total += count
        unloggedThrough = total
    }

    /// Calls `body` with each key evicted after the first `seen` evictions and returns true, or
    /// returns false (calling nothing) when some of them are no longer, or never were, logged.
    public func forEachKey(since seen: Int, _ body: (OverrideKey) -> Void) -> Bool {
        guard seen >= unloggedThrough, total - seen <= ring.count else { return false }
        for number in seen..<total { body(ring[number % Self.capacity]) }
        return true
    }
}
