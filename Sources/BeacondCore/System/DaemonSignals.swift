import Glibc

/// The signals `beacond run` handles itself: SIGHUP reloads, SIGTERM and SIGINT stop gracefully.
///
/// Their default action kills the process, and the handlers (`UnixSignalsSequence`, which reads them
/// through libdispatch's signalfd) exist only once the daemon is set up, tens of milliseconds after
/// exec. So `main` blocks them first, in the main thread before any other thread exists: every
/// thread inherits the mask, a signal that comes early stays pending instead of killing the daemon,
/// and the signalfd delivers it once the handlers are there (an early SIGHUP reloads, an early
/// SIGTERM stops gracefully). Other commands keep the default actions, so Ctrl-C stops `scan`.
package enum DaemonSignals {
    static let handled: [Int32] = [SIGHUP, SIGTERM, SIGINT]
    /// The signals `beacond kiosk` handles (`TerminalKiosk`): SIGTERM, SIGINT and SIGHUP (its
    /// terminal hung up) stop it after restoring the terminal; SIGWINCH redraws. SIGWINCH is
    /// ignored by default, and a process-directed signal that is ignored and not blocked is
    /// discarded before a signalfd could read it, so it is blocked like the others.
    static let kioskHandled: [Int32] = [SIGHUP, SIGTERM, SIGINT, SIGWINCH]

    /// The signals the command in `arguments` handles itself, to block in `main` before any
    /// thread starts: `handled` for `run`, `kioskHandled` for `kiosk` and `watch` (which restores
    /// the terminal the same way, and ends a `--once` replay early) and `beacon` (SIGHUP re-reads its
    /// mode file), none for the others.
    package static func handled(byCommandIn arguments: [String]) -> [Int32] {
        switch arguments.dropFirst().first {
        case "run": handled
        case "kiosk", "watch", "beacon": kioskHandled
        default: []
        }
    }

    /// True when the command line runs the daemon (`beacond run …`). The root command takes no
    /// options, so the subcommand is always the first argument.
    package static func needed(arguments: [String]) -> Bool {
        arguments.dropFirst().first == "run"
    }

    /// Blocks `signals` in the calling thread; false if the kernel refused.
    @discardableResult
    package static func block(_ signals: [Int32] = handled) -> Bool {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in signals { sigaddset(&set, signal) }
        return pthread_sigmask(SIG_BLOCK, &set, nil) == 0
    }

    /// Whether `signal` is blocked in the calling thread.
    static func isBlocked(_ signal: Int32) -> Bool {
        var current = sigset_t()
        guard pthread_sigmask(SIG_BLOCK, nil, &current) == 0 else { return false }
        return sigismember(&current, signal) == 1
    }
}
