import Glibc
import UnixSignals

/// `beacond watch` without a TTY or with `--once`: one plain snapshot (`WatchScreen.snapshot`).
/// Against a daemon, of its status now; on a replay, of the state when the capture has played
/// to its end. The blocking part runs on a thread of its own, so SIGTERM, SIGINT or SIGHUP
/// (blocked by `main`, read here) stop a long replay at once.
package enum WatchOnce {
    package enum Outcome: Sendable {
        /// The snapshot; `failure` says why a replay stopped early (exit 1 after printing it).
        case snapshot(String, failure: String?)
        /// No status at all: exit 1.
        case failed(String)
        /// Stopped by a signal before the snapshot: exit 1.
        case signal(Int32)
    }

    /// How often a replay's status is checked for its end, µs.
    static let replayCheckMicros: Int64 = 20_000

    package static func run(
        source: any WatchSource, replay: (any FiniteWatchSource)?, showsDevices: Bool, sort: WatchSort
    ) async -> Outcome {
        let signals = await UnixSignalsSequence(trapping: .sigterm, .sigint, .sighup)
        let (outcomes, deliver) = AsyncStream.makeStream(of: Outcome.self, bufferingPolicy: .bufferingNewest(4))
        let signalTask = Task {
            for await signal in signals { deliver.yield(.signal(signal.rawValue)) }
        }
        defer { signalTask.cancel() }
        let stop: WakeSignal
        do throws(WakeSignal.Failure) {
            stop = try WakeSignal()
        } catch {
            return .failed("cannot make the snapshot's stop signal: \(errnoText(error.errno))")
        }
        // Ends the thread's waits once the outcome is in (a signal may come first).
        defer { stop.signal() }
        let snapshotTask = Task {
            do {
                try await BlockingThreadBridge.run(stop: { stop.signal() }) {
                    deliver.yield(
                        snapshot(source: source, replay: replay, showsDevices: showsDevices, sort: sort, stop: stop))
                }
            } catch {
                deliver.yield(.failed("\(error)"))
            }
        }
        defer { snapshotTask.cancel() }
        for await outcome in outcomes { return outcome }
        return .signal(SIGTERM)
    }

    /// Blocks until the snapshot can be taken (a replay's end), then takes it. `stop` ends the wait
    /// for a replay's end early.
    static func snapshot(
        source: any WatchSource, replay: (any FiniteWatchSource)?, showsDevices: Bool, sort: WatchSort, stop: WakeSignal
    ) -> Outcome {
        defer { source.close() }
        var status: StatusMessage
        do throws(WatchSourceError) {
            status = try source.fetch(devices: showsDevices)
            while replay != nil, !status.replayIsFinished, replay?.failed == nil {
                if stop.wait(micros: replayCheckMicros) { return .failed("stopped before the replay's end") }
                status = try source.fetch(devices: showsDevices)
            }
        } catch {
            return .failed(error.description)
        }
        let view = WatchView(source: source.label, status: status, sort: sort, showsDevices: showsDevices)
        var failure: String?
        if let replay, status.scanner.state != .none {
            let detail = status.scanner.state == .down ? status.scanner.detail.map(WatchLine.safe) : nil
            failure = detail ?? replay.failed
        }
        return .snapshot(WatchScreen.snapshot(view), failure: failure)
    }
}
