import NIOCore
import Synchronization

/// The engine clock of the replay backend: capture time, advancing at `speed` × real time
/// from the first record, or, at maximum speed, jumping from input to input.
///
/// Any `Int64` capture time works: virtual time saturates at `Int64.max` instead of overflowing,
/// and real delays are computed in floating point and capped at `maxRealMicros`.
final class ReplayClock: EngineClock, Sendable {
    enum Speed: Equatable, Sendable {
        case factor(Double)
        case maximum
    }

    /// The longest real delay the clock hands out: about 292 years, the longest a `TimeAmount`
    /// holds. A capture's gap longer than that is waited out in steps of this.
    static let maxRealMicros = Int64.max / 1000

    let speed: Speed
    /// Capture time and CLOCK_MONOTONIC at the start; for maximum speed, the latest input's time.
    private let anchor: Mutex<(capture: Int64, monotonic: Int64)>

    init(start: Int64, speed: Speed) {
        self.speed = speed
        anchor = Mutex((start, MonotonicClock.micros()))
    }

    /// A capture's time is wall time: v3 frames are judged against the capture, as they were heard.
    func wallMicros(at time: Int64) -> Int64 { time }

    func now() -> Int64 {
        let (capture, monotonic) = anchor.withLock { $0 }
        switch speed {
        case .maximum:
            return capture
        case .factor(let factor):
            let elapsed = Self.clamped(Double(MonotonicClock.micros() - monotonic) * factor)
            let (time, overflow) = capture.addingReportingOverflow(elapsed)
            return overflow ? (elapsed > 0 ? .max : .min) : time
        }
    }

    func realDelay(until time: Int64) -> TimeAmount? {
        guard case .factor = speed else { return nil }
        return .microseconds(realMicros(until: time))
    }

    /// Maximum speed: the clock stands at the input being delivered. A running clock ignores it.
    func jump(to time: Int64) {
        guard case .maximum = speed else { return }
        anchor.withLock { anchor in
            if time > anchor.capture { anchor.capture = time }
        }
    }

    /// Real time until the clock reaches `time`, in microseconds, from 0 to `maxRealMicros`;
    /// 0 at maximum speed. `time - now` may exceed Int64 (a jump across the range): then it is
    /// taken in Double.
    func realMicros(until time: Int64) -> Int64 {
        guard case .factor(let factor) = speed, factor > 0 else { return 0 }
        let current = now()
        let (gap, overflow) = time.subtractingReportingOverflow(current)
        let virtual = overflow ? Double(time) - Double(current) : Double(gap)
        let real = (virtual / factor).rounded(.up)
        return min(max(0, Self.clamped(real)), Self.maxRealMicros)
    }

    /// `value` converted to Int64, saturating at the ends (NaN gives 0).
    static func clamped(_ value: Double) -> Int64 {
        if value.isNaN { return 0 }
        if value >= 9_223_372_036_854_775_807.0 { return .max }
        if value <= -9_223_372_036_854_775_808.0 { return .min }
        return Int64(value)
    }
}
