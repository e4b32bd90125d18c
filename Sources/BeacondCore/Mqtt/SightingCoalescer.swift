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

    private struct Window {
        var lastSent: Int64
        var pending: Bool
    }

    /// One entry per key, so a sighting (10,000 a second at a busy venue) costs one hash lookup.
    private var windows: [OverrideKey: Window] = [:]

    package init(interval: Int64 = 1_000_000, maxKeys: Int = 4096) {
        self.interval = max(1, interval)
        self.maxKeys = max(1, maxKeys)
    }

    package var rememberedKeys: Int { windows.count }

    package mutating func offer(_ key: OverrideKey, at now: Int64) -> Decision {
        if let index = windows.index(forKey: key) {
            let window = windows.values[index]
            guard now - window.lastSent < interval else {
                windows.values[index].lastSent = now
                return .sendNow
            }
            if window.pending { return .alreadyPending }
            windows.values[index].pending = true
            return .scheduled(delay: window.lastSent + interval - now)
        }
        if windows.count >= maxKeys {
            windows = windows.filter { now - $0.value.lastSent < interval || $0.value.pending }
            if windows.count >= maxKeys { return .tableFull }
        }
        windows[key] = Window(lastSent: now, pending: false)
        return .sendNow
    }

    /// True when `key` had a sighting pending; it is then sent and its window restarts.
    package mutating func takePending(_ key: OverrideKey, at now: Int64) -> Bool {
        guard let index = windows.index(forKey: key), windows.values[index].pending else { return false }
        windows.values[index] = Window(lastSent: now, pending: false)
        return true
    }
}
