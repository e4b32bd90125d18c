import Logging
import Synchronization

/// What an advertiser backend is doing, for the transmitter's state.
package enum AdvertiserState: Hashable, Sendable {
    /// Opening the adapter for the first time.
    case starting
    /// Advertising the data it was given, through this path ("legacy", "extended", "bluez").
    case advertising(mode: String)
    /// Up, with nothing to advertise (advertising disabled).
    case idle
    /// The adapter is missing or failed; retrying.
    case down(reason: String)
    case stopped
}

/// A failure of one session with the adapter: permanent ones end the transmitter before it was
/// ever up (no Bluetooth, no permission); the rest are retried.
protocol AdvertiserFailure: Error, CustomStringConvertible {
    var isPermanent: Bool { get }
}

/// What both advertiser backends share: the data wanted and the stop, handed from any thread to
/// the backend's own thread through a wake signal; the state and counts the transmitter reports;
/// and the retry loop around sessions with the adapter, with back-off as the scanners have.
package final class AdvertiserControl: Sendable {
    private struct Shared {
        var desired: [UInt8]?
        var stopping = false
        var state = AdvertiserState.starting
        var frames = 0
        var restarts = 0
    }

    /// Wakes the backend's thread for new data or a stop; its descriptor can join a poll(2).
    package let wake: WakeSignal
    private let shared = Mutex(Shared())
    private let onState: @Sendable (AdvertiserState) -> Void
    private let logger: Logger

    package init(logger: Logger, onState: @escaping @Sendable (AdvertiserState) -> Void) throws(WakeSignal.Failure) {
        wake = try WakeSignal()
        self.onState = onState
        self.logger = logger
    }

    /// Advertising data to send (a complete AD payload), or nil to stop advertising.
    package func set(_ data: [UInt8]?) {
        let changed = shared.withLock { shared in
            defer { shared.desired = data }
            return shared.desired != data
        }
        if changed { wake.signal() }
    }

    package func stop() {
        shared.withLock { $0.stopping = true }
        wake.signal()
    }

    package var state: AdvertiserState { shared.withLock { $0.state } }
    /// Frames handed to the radio (each change of data once).
    package var frames: Int { shared.withLock { $0.frames } }
    /// Times the adapter was reopened after it was lost.
    package var restarts: Int { shared.withLock { $0.restarts } }
    package var isStopping: Bool { shared.withLock { $0.stopping } }

    /// The data wanted now and whether to stop; clears the wake-up that announced them.
    package func take() -> (desired: [UInt8]?, stopping: Bool) {
        wake.drain()
        return shared.withLock { ($0.desired, $0.stopping) }
    }

    package func countFrame() { shared.withLock { $0.frames += 1 } }

    package func report(_ state: AdvertiserState) {
        let changed = shared.withLock { shared in
            defer { shared.state = state }
            return shared.state != state
        }
        if changed { onState(state) }
    }

    /// Runs `session` until it returns (a stop) or the transmitter stops, retrying each failure
    /// after a back-off. `session` calls its argument once the adapter is usable, which counts a
    /// restart after the first time and resets the back-off. Returns a permanent failure met
    /// before the adapter was ever up; nil otherwise.
    func lifecycle<Failure: AdvertiserFailure>(
        adapter: String, retryInitial: Int64, retryMax: Int64,
        session: (_ up: () -> Void) throws(Failure) -> Void
    ) -> Failure? {
        var backoff = Backoff(floor: retryInitial, cap: retryMax)
        var everUp = false
        // A failure that repeats the last one is logged at debug level only, as the scanners do.
        var lastWarning: String?
        while !isStopping {
            do throws(Failure) {
                try session {
                    if everUp { shared.withLock { $0.restarts += 1 } }
                    everUp = true
                    backoff.succeeded()
                    lastWarning = nil
                }
                break
            } catch {
                if !everUp, error.isPermanent {
                    report(.down(reason: error.description))
                    return error
                }
                let delay = backoff.failed()
                let reason = "\(error); retrying in \(DecimalText.format(micros: delay)) s"
                let level: Logger.Level = error.description == lastWarning ? .debug : .warning
                logger.log(level: level, "beacon transmitter on \(adapter): \(TerminalText.logged(reason))")
                lastWarning = error.description
                report(.down(reason: reason))
                if waitOut(delay) { break }
            }
        }
        report(.stopped)
        return nil
    }

    /// Waits `micros` for a stop; true when one came. New data meanwhile waits for the adapter.
    private func waitOut(_ micros: Int64) -> Bool {
        let deadline = MonotonicClock.micros() &+ micros
        while true {
            let remaining = deadline - MonotonicClock.micros()
            guard remaining > 0 else { return false }
            if wake.wait(micros: remaining) {
                wake.drain()
                if isStopping { return true }
            }
        }
    }
}
