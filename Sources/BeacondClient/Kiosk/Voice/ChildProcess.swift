import Glibc

/// A program the kiosk's voice runs (espeak-ng, aplay), started with `posix_spawnp` (no shell:
/// every argument is passed as it is), its stdin from /dev/null, stdout to /dev/null or a file,
/// stderr to a file; waited for by the voice's own thread and killed from another to cut an
/// announcement off.
package struct ChildProcess: Sendable {
    package let pid: pid_t

    /// Why a program did not start or did not succeed.
    package enum Failure: Error, Equatable, CustomStringConvertible {
        /// Not found on PATH (or not executable).
        case missing(String)
        case spawn(String, Int32)
        case exited(String, status: Int32, stderr: String)
        case killed(String, signal: Int32)

        package var description: String {
            switch self {
            case .missing(let program): "\(program) is not installed (or not on PATH)"
            case .spawn(let program, let code): "cannot start \(program): \(errnoText(code))"
            case .exited(let program, let status, let stderr):
                "\(program) exited with status \(status)" + (stderr.isEmpty ? "" : ": \(stderr)")
            case .killed(let program, let signal): "\(program) was stopped by signal \(signal)"
            }
        }
    }

    /// Starts `arguments[0]` found on PATH; `stdoutPath` nil is /dev/null; stderr goes to
    /// `stderrPath`.
    package static func spawn(
        _ arguments: [String], stdoutPath: String? = nil, stderrPath: String
    ) throws(Failure) -> ChildProcess {
        guard let program = arguments.first else { throw .missing("") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdoutPath ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, stderrPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        // The kiosk blocks its quit signals in every thread (DaemonSignals); a child starts with
        // them unblocked and at their defaults, so a cut-off's SIGTERM ends it.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGWINCH] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let result = posix_spawnp(&pid, program, &actions, &attributes, &argv, environ)
        guard result == 0 else { throw result == ENOENT ? .missing(program) : .spawn(program, result) }
        return ChildProcess(pid: pid)
    }

    /// Waits for the program to end; throws unless it exited 0. `stderrPath`'s last line (aplay
    /// ends with its own after ALSA's) goes into the failure.
    package func wait(program: String, stderrPath: String) throws(Failure) {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw .spawn(program, errno) }
        }
        let signal = status & 0x7F
        if signal != 0 { throw .killed(program, signal: signal) }
        let code = (status >> 8) & 0xFF
        guard code == 0 else {
            let text = (try? readRegularFilePrefix(stderrPath, maxBytes: 16_384)).map {
                String(decoding: $0, as: UTF8.self)
            }
            let last = text?.split(separator: "\n").last.map(String.init) ?? ""
            throw .exited(program, status: code, stderr: TerminalText.escaped(last, limit: 200))
        }
    }

    /// Ends it (SIGTERM); the waiting thread's `wait` then reports `.killed`.
    package func terminate() {
        _ = kill(pid, SIGTERM)
    }
}
