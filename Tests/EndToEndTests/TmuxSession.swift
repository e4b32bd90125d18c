import BeacondTestSupport
import Foundation

/// A tmux server of its own (`tmux -L NAME`, no config file) with one detached session running a
/// command: the kiosk tests read its screen with `capture-pane`. `kill()` (and deinit) ends the
/// server, so tests never share one and none is left behind.
final class TmuxSession {
    let server: String
    private var alive = true
    /// The server's socket file, removed with it (tmux leaves it behind).
    private var socketPath = ""

    /// The tmux executable on PATH, or nil (the tests are skipped; `make deps` installs it).
    static let executable: String? = {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = "\(directory)/tmux"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }()

    static var available: Bool { executable != nil }

    init(columns: Int, rows: Int, command: String) throws {
        server = "beacond-kiosk-\(getpid())-\(UUID().uuidString.prefix(8).lowercased())"
        let result = try run(
            ["-f", "/dev/null", "new-session", "-d", "-s", "kiosk", "-x", "\(columns)", "-y", "\(rows)", command],
            collect: false)
        guard result.status == 0 else { throw TmuxError(message: "tmux new-session exited \(result.status)") }
        // The kiosk's exit status and screen stay readable after it ends.
        _ = try run(["set-option", "-t", "kiosk", "remain-on-exit", "on"])
        socketPath = display("#{socket_path}")
    }

    deinit { kill() }

    struct TmuxError: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }

    /// Ends the server and everything in it.
    func kill() {
        guard alive else { return }
        alive = false
        _ = try? run(["kill-server"])
        if socketPath.hasPrefix("/") { unlink(socketPath) }
    }

    /// The screen as text, one string per row (trailing spaces removed).
    func text() -> [String] {
        capture(escapes: false).map { String($0.reversed().drop { $0 == " " }.reversed()) }
    }

    /// The screen with its colours as escape sequences (`capture-pane -e`), rows joined.
    func escaped() -> String {
        capture(escapes: true).joined(separator: "\n")
    }

    /// The last row, trimmed: the kiosk's status line.
    func statusLine() -> String {
        (text().last ?? "").trimmingCharacters(in: .whitespaces)
    }

    /// A tmux format of the pane (`#{pane_pid}`, `#{alternate_on}` …).
    func display(_ format: String) -> String {
        ((try? run(["display-message", "-p", "-t", "kiosk", format]))?.output ?? "")
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func resize(columns: Int, rows: Int) throws {
        let result = try run(["resize-window", "-t", "kiosk", "-x", "\(columns)", "-y", "\(rows)"])
        guard result.status == 0 else { throw TmuxError(message: "resize-window failed: \(result.output)") }
    }

    /// Polls the screen until `condition` holds; false after `timeout` seconds.
    func waitFor(timeout: Double = 15, _ condition: (TmuxSession) -> Bool) -> Bool {
        blockingWaitUntil(within: timeout, intervalMicros: 2_000) { condition(self) }
    }

    private func capture(escapes: Bool) -> [String] {
        let arguments = ["capture-pane", "-p", "-t", "kiosk"] + (escapes ? ["-e"] : [])
        guard let result = try? run(arguments), result.status == 0 else { return [] }
        var lines = result.output.components(separatedBy: "\n")
        if lines.last == "" { lines.removeLast() }
        return lines
    }

    /// Runs tmux with `arguments`, its output collected (or discarded for commands that may start
    /// the server, which would keep the pipe open). Spawned with an empty signal mask and default
    /// actions: a child of Foundation's `Process` inherits the spawning thread's mask, where Swift
    /// concurrency blocks every signal, and a tmux server with SIGCHLD and SIGTERM blocked never
    /// notices its panes end nor stops.
    private func run(_ arguments: [String], collect: Bool = true) throws -> (status: Int32, output: String) {
        guard let executable = Self.executable else { throw TmuxError(message: "tmux is not installed") }
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { throw TmuxError(message: "pipe: \(errno)") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        if collect {
            posix_spawn_file_actions_adddup2(&actions, fds[1], 1)
            posix_spawn_file_actions_adddup2(&actions, fds[1], 2)
        } else {
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        }
        _ = addCloseFrom(&actions, 3)
        var attributes = ProcessFigures.spawnAttributesWithDefaultSignals()
        defer { posix_spawnattr_destroy(&attributes) }
        let argv = ([executable, "-L", server] + arguments).map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
        close(fds[1])
        defer { close(fds[0]) }
        guard spawned == 0 else { throw TmuxError(message: "posix_spawn tmux: \(spawned)") }
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(fds[0], &chunk, chunk.count)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            output += chunk[0..<count]
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let exitStatus = (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
        return (exitStatus, String(decoding: output, as: UTF8.self))
    }
}

/// glibc's posix_spawn_file_actions_addclosefrom_np (2.34), which the Glibc module does not
/// import: a server started by a test inherits no other test's pipe.
@_silgen_name("posix_spawn_file_actions_addclosefrom_np")
private func addCloseFrom(_ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>, _ from: Int32) -> Int32

/// /proc readings of a process: CPU time, resident memory, children; and how tests start one.
enum ProcessFigures {
    /// What a process started by a test is idle for: CPU seconds used over `wall` seconds, and
    /// its resident memory at the end.
    struct Idle {
        var cpu: Double
        var wall: Double
        var residentKilobytes: Int
    }

    /// Sleeps `seconds` of real time on purpose (the CPU used while idle is what is measured),
    /// then reads what `pid` used meanwhile; nil when /proc has no such process.
    static func idle(_ pid: Int32, seconds: UInt32 = 10) -> Idle? {
        guard let before = cpuSeconds(pid) else { return nil }
        let started = Date()
        usleep(seconds * 1_000_000)
        guard let after = cpuSeconds(pid), let rss = residentKilobytes(pid) else { return nil }
        return Idle(cpu: after - before, wall: Date().timeIntervalSince(started), residentKilobytes: rss)
    }

    /// posix_spawn attributes that give the child an empty signal mask and every signal's default
    /// action: a test's thread has them all blocked (Swift concurrency), and the child must not
    /// inherit that. The caller destroys them.
    static func spawnAttributesWithDefaultSignals() -> posix_spawnattr_t {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        var none = sigset_t()
        sigemptyset(&none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        return attributes
    }

    /// utime + stime of `pid` in seconds (fields 14 and 15 of /proc/PID/stat).
    static func cpuSeconds(_ pid: Int32) -> Double? {
        guard let fields = statFields(pid), fields.count > 12, let user = Double(fields[11]),
            let system = Double(fields[12])
        else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// VmRSS of `pid`, kilobytes.
    static func residentKilobytes(_ pid: Int32) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return Int(line.dropFirst("VmRSS:".count).split(whereSeparator: { $0 == " " || $0 == "\t" }).first ?? "")
        }
        return nil
    }

    /// The first child of `parent` found in /proc, or nil.
    static func child(of parent: Int32) -> Int32? {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        for entry in entries {
            guard let pid = Int32(entry), let fields = statFields(pid), fields.count > 1 else { continue }
            if Int32(fields[1]) == parent { return pid }
        }
        return nil
    }

    /// The fields of /proc/PID/stat after the command name: [0] is field 3 (state).
    private static func statFields(_ pid: Int32) -> [Substring]? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let afterName = text.range(of: ")", options: .backwards)?.upperBound
        else { return nil }
        return text[afterName...].split(separator: " ")
    }
}
