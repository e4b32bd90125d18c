import CircuitState

/// Coalesces beacon sightings to at most one per `interval` per key for MQTT: the first goes at once,
/// later ones within the window fold into one sent when it ends. Bounded: it remembers at most
/// `maxKeys` keys (older entries are forgotten first when full; a forgotten key just sends at once).
package struct SightingCoalescer: Sendable {
    package enum Decision: Equatable, Sendable {
        case sendNow
        case scheduled(delay: Int64)
        case alreadyPending
        /// `maxKeys` keys are in their window: this sighting is dropped (and counted by the caller).
        case tableFull
    }

    package let interval: Int64
    package let maxKeys: Int
    private var lastSent: [OverrideKey: Int64] = [:]
    private var pending: Set<OverrideKey> = []

    package init(interval: Int64 = 1_000_000, maxKeys: Int = 4096) {
        self.interval = max(1, interval)
        self.maxKeys = max(1, maxKeys)
    }

    package var rememberedKeys: Int { lastSent.count }

    package mutating func offer(_ key: OverrideKey, at now: Int64) -> Decision {
        if lastSent.count >= maxKeys, lastSent[key] == nil {
            lastSent = lastSent.filter { now - $0.value < interval || pending.contains($0.key) }
            if lastSent.count >= maxKeys { return .tableFull }
        }
        guard let sent = lastSent[key], now - sent < interval else {
            lastSent[key] = now
            return .sendNow
        }
        guard pending.insert(key).inserted else { return .alreadyPending }
        return .scheduled(delay: sent + interval - now)
    }

    /// True when `key` had a sighting pending; it is then sent and its window restarts.
    package mutating func takePending(_ key: OverrideKey, at now: Int64) -> Bool {
        guard pending.remove(key) != nil else { return false }
        lastSent[key] = now
        return true
    }
}
