import CircuitState

/// Coalesces beacon updates to at most one per 250 ms per beacon: the first goes at once,
/// later ones within the window are folded into one sent when it ends. Bounded: it only
/// remembers beacons sent in the last window.
struct BeaconThrottle {
    static let interval: Int64 = 250_000

    enum Decision: Equatable {
        case sendNow
        case scheduled(delay: Int64)
        case alreadyPending
    }

    private var lastSent: [OverrideKey: Int64] = [:]
    private var pending: Set<OverrideKey> = []

    mutating func offer(_ key: OverrideKey, at now: Int64) -> Decision {
        if lastSent.count > 4096 { lastSent = lastSent.filter { now - $0.value < Self.interval } }
        guard let sent = lastSent[key], now - sent < Self.interval else {
            lastSent[key] = now
            return .sendNow
        }
        guard pending.insert(key).inserted else { return .alreadyPending }
        return .scheduled(delay: sent + Self.interval - now)
    }

    /// True when `key` had an update pending; it is then sent and the window restarts.
    mutating func takePending(_ key: OverrideKey, at now: Int64) -> Bool {
        guard pending.remove(key) != nil else { return false }
        lastSent[key] = now
        return true
    }
}
