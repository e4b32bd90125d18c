/// A retry delay in microseconds that doubles with each consecutive failure: `floor` after the
/// first, twice that after the second, and so on up to `cap`. With `jitter` above zero a delay
/// past the floor is shortened by up to that fraction of itself (never below `floor`), so peers
/// that failed together do not retry together.
///
/// Used by the scanners' restarts (no jitter) and the remote poller (25 %, capped at a third of
/// `stale_after`, see `RemoteBackoff`). Saturates instead of trapping on absurd settings.
package struct Backoff: Hashable, Sendable {
    /// The first delay, and the shortest; at most `cap`.
    let floor: Int64
    /// The longest delay.
    let cap: Int64
    /// The largest fraction jitter takes off a delay, in [0, 1].
    let jitter: Double
    /// Consecutive failures since the last success.
    private(set) var failures = 0

    /// Negative values count as zero; a `floor` above `cap` is lowered to it.
    package init(floor: Int64, cap: Int64, jitter: Double = 0) {
        self.cap = max(0, cap)
        self.floor = min(max(0, floor), self.cap)
        self.jitter = jitter.isFinite ? min(max(jitter, 0), 1) : 0
    }

    /// The delay after `failures` consecutive failures: the floor for 0 or 1, then doubling up to
    /// the cap. `random`, in [0, 1), picks the jitter; anything else is clamped (NaN counts as 0).
    package func delay(afterFailures failures: Int, random: Double = 0) -> Int64 {
        guard failures > 1 else { return floor }
        let shift = min(failures - 1, 62)
        let nominal = floor > cap >> shift ? cap : floor << shift
        guard jitter > 0, nominal > floor else { return nominal }
        let unit = random.isFinite ? min(max(random, 0), 1) : 0
        let shortened = (Double(nominal) * (1 - jitter * unit)).rounded(.down)
        // `shortened` is at most `nominal`; the check keeps the conversion from trapping anyway.
        let jittered = shortened < Double(nominal) ? Int64(shortened) : nominal
        return min(cap, max(floor, jittered))
    }

    /// Counts a failure and returns the delay before the next attempt.
    package mutating func failed(random: Double = 0) -> Int64 {
        failures = failures == .max ? failures : failures + 1
        return delay(afterFailures: failures, random: random)
    }

    /// A success: the next failure waits the floor again.
    package mutating func succeeded() { failures = 0 }
}
