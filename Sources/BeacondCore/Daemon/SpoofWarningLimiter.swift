import CircuitState

/// Remembers when each key's contest was last logged, so that a key is logged at most once a
/// minute (engine time). Bounded: keys not logged for a minute are forgotten, and past
/// `capacity` keys at once (a flood of contests) the rest are counted, not logged.
struct SpoofWarningLimiter {
    static let interval: Int64 = 60_000_000
    static let capacity = 1024

    private var lastWarned: [OverrideKey: Int64] = [:]
    private(set) var suppressed = 0

    mutating func shouldWarn(_ key: OverrideKey, at now: Int64) -> Bool {
        if let last = lastWarned[key], Self.isRecent(last, at: now) {
            suppressed += 1
            return false
        }
        if lastWarned[key] == nil, lastWarned.count >= Self.capacity {
            lastWarned = lastWarned.filter { Self.isRecent($0.value, at: now) }
            guard lastWarned.count < Self.capacity else {
                suppressed += 1
                return false
            }
        }
        lastWarned[key] = now
        return true
    }

    /// Capture time may sit anywhere in Int64: an elapsed time that does not fit is long ago.
    private static func isRecent(_ time: Int64, at now: Int64) -> Bool {
        let (elapsed, overflow) = now.subtractingReportingOverflow(time)
        return !overflow && elapsed < interval
    }
}
