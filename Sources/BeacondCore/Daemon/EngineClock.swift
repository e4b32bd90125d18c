import NIOCore

/// The engine's clock as the daemon runs it.
package protocol EngineClock: AnyObject {
    /// Engine time now, microseconds: CLOCK_BOOTTIME live, capture time in replay.
    func now() -> Int64
    /// The real time until the engine clock reaches `time`; nil when it never gets there by
    /// itself (a replay at maximum speed, driven input by input).
    func realDelay(until time: Int64) -> TimeAmount?
}

/// CLOCK_BOOTTIME: monotonic, and counting through suspend.
package final class BootClock: EngineClock {
    package init() {}

    package func now() -> Int64 { MonotonicClock.bootMicros() }

    package func realDelay(until time: Int64) -> TimeAmount? {
        .microseconds(max(0, time - now()))
    }
}
