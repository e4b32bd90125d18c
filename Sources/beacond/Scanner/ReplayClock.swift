import NIOCore
import Synchronization

/// The engine clock of the replay backend: capture time, advancing at `speed` × real time
/// from the first record, or, at maximum speed, jumping from input to input.
final class ReplayClock: EngineClock, Sendable {
    enum Speed: Equatable, Sendable {
        case factor(Double)
        case maximum
    }

    let speed: Speed
    /// Capture time and CLOCK_MONOTONIC at the start; for maximum speed, the latest input's time.
    private let anchor: Mutex<(capture: Int64, monotonic: Int64)>

    init(start: Int64, speed: Speed) {
        self.speed = speed
        anchor = Mutex((start, MonotonicClock.micros()))
    }

    func now() -> Int64 {
        let (capture, monotonic) = anchor.withLock { $0 }
        switch speed {
        case .maximum:
            return capture
        case .factor(let factor):
            return capture + Int64(Double(MonotonicClock.micros() - monotonic) * factor)
        }
    }

    func realDelay(until time: Int64) -> TimeAmount? {
        guard case .factor(let factor) = speed else { return nil }
        return .microseconds(max(0, Int64((Double(time - now()) / factor).rounded(.up))))
    }

    /// Maximum speed: the clock stands at the input being delivered. A running clock ignores it.
    func jump(to time: Int64) {
        guard case .maximum = speed else { return }
        anchor.withLock { anchor in
            if time > anchor.capture { anchor.capture = time }
        }
    }

    /// Real time until the clock reaches `time`, in microseconds; 0 at maximum speed.
    func realMicros(until time: Int64) -> Int64 {
        guard case .factor(let factor) = speed else { return 0 }
        return max(0, Int64((Double(time - now()) / factor).rounded(.up)))
    }
}
