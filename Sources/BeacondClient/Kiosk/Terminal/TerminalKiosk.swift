import Glibc
import NIOCore
import NIOPosix
import Synchronization
import UnixSignals

/// `beacond kiosk` in a terminal: follows the daemon (`TrackStateFeed`) and draws `KioskView`
/// full-screen (`KioskFrame`), until SIGTERM, SIGINT or SIGHUP.
///
/// One loop draws, woken by: a state or a lost connection (redrawn at once), SIGWINCH (redrawn
/// at the new size), and a tick on the monotonic clock, every 500 ms while the evacuation flag
/// flashes and every second otherwise (the ages move, and a full repaint each second repairs
/// anything written over the screen, such as kernel messages on a console). Nothing else runs:
/// idle, the kiosk sleeps between ticks. The daemon going away is shown, never a reason to exit.
///
/// The caller blocks SIGTERM, SIGINT, SIGHUP and SIGWINCH in every thread before starting any
/// (`DaemonSignals`), so they reach `UnixSignalsSequence` (a signalfd) instead of their defaults.
package enum TerminalKiosk {
    package struct Options: Sendable {
        package var socket: String
        /// No flash: the evacuation flag stays red.
        package var steady = false
        package var capabilities: TerminalCapabilities
        /// The languages and the exit (`kiosk.*` of `--config`).
        package var presentation: KioskPresentation
        /// Says each change of flag aloud (`--speak`); nil: silent.
        package var voice: KioskVoice?

        package init(
            socket: String, steady: Bool = false, capabilities: TerminalCapabilities,
            presentation: KioskPresentation = KioskPresentation(), voice: KioskVoice? = nil
        ) {
            self.socket = socket
            self.steady = steady
            self.capabilities = capabilities
            self.presentation = presentation
            self.voice = voice
        }
    }

    /// Why the loop ended.
    package enum Ending: Error, CustomStringConvertible {
        /// SIGTERM, SIGINT or SIGHUP: exit 0.
        case signal(Int32)
        /// The terminal cannot be written to (a hung-up tty): exit 1.
        case terminal(KioskTerminal.WriteError)
        /// The feed's thread did not start: exit 1.
        case feed(PosixThread.StartError)

        package var description: String {
            switch self {
            case .signal(let number): "stopped by signal \(number)"
            case .terminal(let error): "\(error)"
            case .feed(let error): "\(error)"
            }
        }
    }

    /// The flash's half period.
    static let flashMicros: Int64 = 500_000
    /// The tick when nothing flashes.
    static let refreshMicros: Int64 = 1_000_000

    /// Runs the kiosk until a quit signal (returned) or a failure (thrown); the terminal is
    /// restored either way.
    package static func run(_ options: Options) async -> Ending {
        let signals = await UnixSignalsSequence(trapping: .sigterm, .sigint, .sighup, .sigwinch)
        let (wakes, waker) = AsyncStream.makeStream(of: Wake.self, bufferingPolicy: .bufferingNewest(32))
        let start = LinkState(since: MonotonicClock.wallMicros(), reason: "connecting to \(options.socket)")
        let shared = Shared(link: start)
        let feed = TrackStateFeed(configuration: .init(path: options.socket)) { event in
            let link = shared.link.withLock { state in
                state.apply(event, now: MonotonicClock.wallMicros())
                return state.link
            }
            options.voice?.follow(link)
            waker.yield(.link)
        }
        let signalTask = Task {
            for await signal in signals { waker.yield(.signal(signal.rawValue)) }
        }
        let tickTask = Task {
            let loop = MultiThreadedEventLoopGroup.singleton.next()
            while !Task.isCancelled {
                let period = shared.flashing.load(ordering: .relaxed) ? flashMicros : refreshMicros
                // Sleep to the next whole period, so ticks fall on the flash's phase changes, or to
                // the next change of language when that comes first.
                let now = MonotonicClock.micros()
                var wait = period - now % period + 1_000
                let language = shared.nextLanguageChange.load(ordering: .relaxed)
                if language > now { wait = min(wait, language - now + 1_000) }
                try? await loop.wait(for: .microseconds(wait))
                waker.yield(.tick)
            }
        }
        let terminal = KioskTerminal(resetsColors: options.capabilities.colors != .none)
        defer {
            feed.stop()
            tickTask.cancel()
            signalTask.cancel()
            waker.finish()
            terminal.restore()
        }
        do throws(Ending) {
            do throws(KioskTerminal.WriteError) { try terminal.enter() } catch { throw .terminal(error) }
            do throws(PosixThread.StartError) { try feed.start() } catch { throw .feed(error) }
            var painter = Painter(options: options, terminal: terminal)
            try painter.draw(shared)
            for await wake in wakes {
                if case .signal(let number) = wake, number != SIGWINCH { return .signal(number) }
                try painter.draw(shared)
            }
            return .signal(SIGTERM)
        } catch {
            return error
        }
    }

    /// `kiosk --once`: one frame of the daemon's state now, as plain text rows (no escape
    /// sequence), and whether the daemon answered (a NO SIGNAL frame when it did not). The words
    /// are in the first language of `presentation`.
    package static func snapshot(
        socket: String, columns: Int, rows: Int, presentation: KioskPresentation = KioskPresentation()
    ) -> (rows: [String], answered: Bool) {
        let now = MonotonicClock.wallMicros()
        var link = KioskView.Link.unreachable(since: now, reason: "")
        let event = TrackStateFeed.snapshot(path: socket)
        link.apply(event, now: now)
        let view = KioskView(
            link: link, now: now, catalogue: presentation.catalogues[0], exit: presentation.exit)
        let lines = KioskFrame.lines(view, columns: columns, rows: rows).map { line in
            String(line.reversed().drop { $0 == " " }.reversed())
        }
        if case .connected = link { return (lines, true) }
        return (lines, false)
    }

    /// The size of a `--once` frame: the terminal's, else `COLUMNS` × `LINES` when both are
    /// whole numbers from 1 to 10,000 (a script's choice), else 80 × 24.
    package static func snapshotSize(output: Int32, environment: [String: String]) -> (columns: Int, rows: Int) {
        if isatty(output) == 1 { return KioskTerminal(output: output).size() }
        let fromEnvironment = [environment["COLUMNS"], environment["LINES"]].map { text in
            text.flatMap { Int($0) }.flatMap { (1...10_000).contains($0) ? $0 : nil }
        }
        if let columns = fromEnvironment[0], let rows = fromEnvironment[1] { return (columns, rows) }
        return KioskTerminal.fallbackSize
    }

    enum Wake: Sendable {
        case link, tick
        case signal(Int32)
    }

    /// What the feed's thread, the ticker and the loop share.
    final class Shared: Sendable {
        let link: Mutex<LinkState>
        /// Whether the frame on screen flashes: the ticker then ticks every half period.
        let flashing = Atomic<Bool>(false)
        /// When the language on screen next changes (monotonic µs); 0 for never.
        let nextLanguageChange = Atomic<Int64>(0)

        init(link: LinkState) {
            self.link = Mutex(link)
        }
    }

    /// The link as the kiosk sees it: the daemon's latest state, or NO SIGNAL since the first loss.
    struct LinkState: Sendable {
        var link: KioskView.Link

        init(since: Int64, reason: String) {
            link = .unreachable(since: since, reason: reason)
        }

        mutating func apply(_ event: TrackStateFeed.Event, now: Int64) {
            link.apply(event, now: now)
        }
    }

    /// Draws frames: the view now, in the language now, at the terminal's size now, in the flash
    /// phase now.
    struct Painter {
        let options: Options
        let terminal: KioskTerminal
        var cycle: KioskLanguageCycle

        init(options: Options, terminal: KioskTerminal) {
            self.options = options
            self.terminal = terminal
            cycle = KioskLanguageCycle(
                count: options.presentation.catalogues.count, period: options.presentation.period)
        }

        mutating func draw(_ shared: Shared) throws(Ending) {
            let link = shared.link.withLock { $0.link }
            let wall = MonotonicClock.wallMicros()
            let monotonic = MonotonicClock.micros()
            let flag = KioskView(link: link, now: wall).flag
            let presentation = options.presentation
            let catalogue = presentation.catalogues[cycle.index(flag: flag, now: monotonic)]
            shared.nextLanguageChange.store(cycle.nextChange(after: monotonic) ?? 0, ordering: .relaxed)
            let view = KioskView(link: link, now: wall, catalogue: catalogue, exit: presentation.exit)
            let flashes = view.flashes && !options.steady
            shared.flashing.store(flashes, ordering: .relaxed)
            let alternate = flashes && (monotonic / TerminalKiosk.flashMicros) % 2 == 1
            let size = terminal.size()
            let frame = KioskFrame.render(
                view, columns: size.columns, rows: size.rows, capabilities: options.capabilities, alternate: alternate)
            do throws(KioskTerminal.WriteError) { try terminal.write(frame) } catch { throw .terminal(error) }
        }
    }
}
