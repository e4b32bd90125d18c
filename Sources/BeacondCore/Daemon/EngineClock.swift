import NIOCore

/// The engine's clock as the daemon runs it.
package protocol EngineClock: AnyObject {
    /// Engine time now, microseconds: CLOCK_BOOTTIME live, capture time in replay.
    func now() -> Int64
    /// The real time until the engine clock reaches `time`; nil when it never gets there by
    /// itself (a replay at maximum speed, driven input by input).
    func realDelay(until time: Int64) -> TimeAmount?
    /// The receiver's wall clock (Unix µs) at engine time `time`, against which a v3 frame's
    /// signing time is judged: CLOCK_REALTIME now live, the capture's own time in replay.
    func wallMicros(at time: Int64) -> Int64
}

extension EngineClock {
    package func wallMicros(at time: Int64) -> Int64 { MonotonicClock.wallMicros() }
}

/// CLOCK_BOOTTIME: monotonic, and counting through suspend.
package final class BootClock: EngineClock {
    package init() {}

    package func now() -> Int64 { MonotonicClock.bootMicros() }

    package func realDelay(until time: Int64) -> TimeAmount? {
        .microseconds(max(0, time - now()))
    }
}
