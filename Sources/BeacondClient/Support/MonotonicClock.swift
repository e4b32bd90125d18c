import Glibc

/// Clocks read in integer microseconds.
package enum MonotonicClock {
    /// CLOCK_MONOTONIC, for measuring elapsed time.
    package static func micros() -> Int64 { read(CLOCK_MONOTONIC) }

    /// CLOCK_BOOTTIME: monotonic, and counting through suspend. TTLs and staleness run on it.
    package static func bootMicros() -> Int64 { read(CLOCK_BOOTTIME) }

    /// CLOCK_REALTIME, for wall-clock stamps shown to people.
    package static func wallMicros() -> Int64 { read(CLOCK_REALTIME) }

    private static func read(_ clock: clockid_t) -> Int64 {
        var spec = timespec()
        clock_gettime(clock, &spec)
        return Int64(spec.tv_sec) * 1_000_000 + Int64(spec.tv_nsec) / 1000
    }
}
