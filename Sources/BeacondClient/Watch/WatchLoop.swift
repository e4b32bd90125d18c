import Glibc
import Synchronization
import UnixSignals

/// `beacond watch` on a terminal: asks the source for its status 4 times a second (on a thread
/// of its own, as the answer may block), reads keys (`s` cycles the sort, `q` quits) on another,
/// and draws `WatchScreen` frames on the alternate screen until `q`, SIGTERM, SIGINT or SIGHUP.
///
/// One loop draws, woken by a new status (or its loss), a key, or SIGWINCH (redrawn at the new
/// size). The caller blocks SIGTERM, SIGINT, SIGHUP and SIGWINCH in every thread before starting
/// any (`DaemonSignals`), so they reach `UnixSignalsSequence` instead of their defaults.
package enum WatchLoop {
    package struct Options: Sendable {
        package var capabilities: TerminalCapabilities
        package var showsDevices: Bool
        /// The order shown first.
        package var sort: WatchSort
        /// The time between two status requests, µs.
        package var period: Int64 = 250_000

        package init(capabilities: TerminalCapabilities, showsDevices: Bool, sort: WatchSort = .key) {
            self.capabilities = capabilities
            self.showsDevices = showsDevices
            self.sort = sort
        }
    }

    /// Why the loop ended.
    package enum Ending: Error, CustomStringConvertible {
        /// `q`: exit 0.
        case quit
        /// SIGTERM, SIGINT or SIGHUP: exit 0.
        case signal(Int32)
        /// The terminal cannot be written to: exit 1.
        case terminal(KioskTerminal.WriteError)
        /// A thread did not start: exit 1.
        case thread(PosixThread.StartError)

        package var description: String {
            switch self {
            case .quit: "quit"
            case .signal(let number): "stopped by signal \(number)"
            case .terminal(let error): "\(error)"
            case .thread(let error): "\(error)"
            }
        }
    }

    enum Wake: Sendable {
        case status
        case key(UInt8)
        case signal(Int32)
    }

    /// The latest answer of the source, shared by the poller thread and the loop, and the two
    /// threads' stop: their waits are on `stopSignal`.
    final class Latest: Sendable {
        let value = Mutex<Result<StatusMessage, WatchSourceError>?>(nil)
        let stopped = Atomic<Bool>(false)
        let stopSignal: WakeSignal

        init() throws(WakeSignal.Failure) {
            stopSignal = try WakeSignal()
        }

        func stop() {
            stopped.store(true, ordering: .relaxed)
            stopSignal.signal()
        }
    }

    /// Runs until `q` or a quit signal (returned) or a failure (returned too); the terminal is
    /// restored either way.
    package static func run(source: any WatchSource, options: Options) async -> Ending {
        let signals = await UnixSignalsSequence(trapping: .sigterm, .sigint, .sighup, .sigwinch)
        let (wakes, waker) = AsyncStream.makeStream(of: Wake.self, bufferingPolicy: .bufferingNewest(64))
        let latest: Latest
        do throws(WakeSignal.Failure) {
            latest = try Latest()
        } catch {
            return .thread(PosixThread.StartError(code: error.errno))
        }
        let signalTask = Task {
            for await signal in signals { waker.yield(.signal(signal.rawValue)) }
        }
        let terminal = KioskTerminal(resetsColors: options.capabilities.colors != .none)
        defer {
            latest.stop()
            signalTask.cancel()
            waker.finish()
            terminal.restore()
        }
        var view = WatchView(
            source: source.label, sort: options.sort, showsDevices: options.showsDevices, interactive: true)
        do throws(Ending) {
            do throws(KioskTerminal.WriteError) { try terminal.enter() } catch { throw .terminal(error) }
            do throws(PosixThread.StartError) {
                try BlockingThreadBridge.detach {
                    pollStatus(source, latest: latest, devices: options.showsDevices, period: options.period) {
                        waker.yield(.status)
                    }
                }
                try BlockingThreadBridge.detach {
                    readKeys(latest: latest) { waker.yield(.key($0)) }
                }
            } catch {
                throw .thread(error)
            }
            try draw(view, terminal: terminal, options: options)
            for await wake in wakes {
                switch wake {
                case .signal(let number) where number != SIGWINCH:
                    return .signal(number)
                case .signal:
                    break
                case .key(let key):
                    switch key {
                    case UInt8(ascii: "q"), UInt8(ascii: "Q"): return .quit
                    case UInt8(ascii: "s"), UInt8(ascii: "S"): view.sort = view.sort.next
                    default: continue
                    }
                case .status:
                    switch latest.value.withLock({ $0 }) {
                    case .success(let status):
                        view.status = status
                        view.problem = nil
                    case .failure(let error):
                        // A table that is no longer current is not shown.
                        view.status = nil
                        view.problem = error.description
                    case nil:
                        continue
                    }
                }
                try draw(view, terminal: terminal, options: options)
            }
            return .signal(SIGTERM)
        } catch {
            return error
        }
    }

    private static func draw(_ view: WatchView, terminal: KioskTerminal, options: Options) throws(Ending) {
        let size = terminal.size()
        let frame = WatchScreen.frame(
            view, columns: size.columns, rows: size.rows, capabilities: options.capabilities)
        do throws(KioskTerminal.WriteError) { try terminal.write(frame) } catch { throw .terminal(error) }
    }

    /// The poller thread: a status every `period` (a second after a failure, so a missing
    /// daemon costs little), until stopped.
    private static func pollStatus(
        _ source: any WatchSource, latest: Latest, devices: Bool, period: Int64, updated: () -> Void
    ) {
        defer { source.close() }
        while !latest.stopped.load(ordering: .relaxed) {
            let started = MonotonicClock.micros()
            let result: Result<StatusMessage, WatchSourceError>
            do throws(WatchSourceError) {
                result = .success(try source.fetch(devices: devices))
            } catch {
                result = .failure(error)
            }
            let failed = if case .failure = result { true } else { false }
            latest.value.withLock { $0 = result }
            updated()
            let wait = (failed ? max(period, 1_000_000) : period) - (MonotonicClock.micros() - started)
            if wait > 0 { latest.stopSignal.wait(micros: min(wait, 1_000_000)) }
        }
    }

    /// The key reader thread: standard input's bytes, one at a time, until stopped or the input
    /// ends.
    private static func readKeys(latest: Latest, pressed: (UInt8) -> Void) {
        var buffer = [UInt8](repeating: 0, count: 64)
        while !latest.stopped.load(ordering: .relaxed) {
            var descriptors = [
                pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0),
                pollfd(fd: latest.stopSignal.descriptor, events: Int16(POLLIN), revents: 0),
            ]
            let ready = Glibc.poll(&descriptors, 2, -1)
            if ready < 0 {
                if errno == EINTR { continue }
                return
            }
            guard ready > 0, descriptors[1].revents == 0 else { return }
            let count = buffer.withUnsafeMutableBytes { read(STDIN_FILENO, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                return
            }
            guard count > 0 else { return }
            for byte in buffer.prefix(count) { pressed(byte) }
        }
    }
}
