import Synchronization

/// Whether a client is looking at every device heard (`watch --all`,
/// `{"cmd":"status","devices":true}`): while one is, the HCI scanners lift their kernel filter
/// (`HCIReportFilter`), which otherwise drops the other devices' reports before beacond reads them.
///
/// Each look keeps the filter lifted for `hold` more; the scanners read `isActive` on each wake-up
/// and are woken when a look begins, so the table of other devices starts filling at once.
/// Times are CLOCK_BOOTTIME µs from `clock`.
package final class AllDevicesDemand: Sendable {
    /// How long one look keeps the filter lifted: several of `watch --all`'s refreshes.
    package static let hold: Int64 = 30_000_000

    package let hold: Int64
    private let clock: @Sendable () -> Int64
    private let until = Atomic<Int64>(Int64.min)
    private let state = Mutex(State())

    private struct State {
        /// When the current stretch of looks began; nil when none is active.
        var since: Int64?
        var listeners: [ObjectIdentifier: WakeSignal] = [:]
        var looks = 0
    }

    package init(
        hold: Int64 = AllDevicesDemand.hold, clock: @escaping @Sendable () -> Int64 = MonotonicClock.bootMicros
    ) {
        self.hold = max(0, hold)
        self.clock = clock
    }

    /// A client looked at every device now; returns how long, in µs, the filter has been lifted
    /// for this stretch of looks (0 for the look that lifts it).
    @discardableResult
    package func look() -> Int64 {
        let now = clock()
        let (since, wakes) = state.withLock { state -> (Int64, [WakeSignal]) in
            state.looks += 1
            let active = until.load(ordering: .acquiring) > now
            until.store(now &+ hold, ordering: .releasing)
            if let since = state.since, active { return (since, []) }
            state.since = now
            return (now, Array(state.listeners.values))
        }
        for wake in wakes { wake.signal() }
        return now - since
    }

    /// Whether a look keeps the filter lifted at `now`. One atomic load: the scanners ask on
    /// every wake-up.
    package func isActive(at now: Int64) -> Bool { until.load(ordering: .acquiring) > now }

    /// Looks since start.
    package var looks: Int { state.withLock { $0.looks } }

    /// `wake` is signalled whenever a stretch of looks begins (the scanner drains it).
    package func addListener(_ wake: WakeSignal) {
        state.withLock { $0.listeners[ObjectIdentifier(wake)] = wake }
    }

    package func removeListener(_ wake: WakeSignal) {
        _ = state.withLock { $0.listeners.removeValue(forKey: ObjectIdentifier(wake)) }
    }
}
