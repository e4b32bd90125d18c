import BeacondTestSupport
import Foundation
import Testing

/// Socket activation as beacond.socket does it, with systemd-socket-activate: it binds the socket,
/// waits for the first client, then execs `beacond run` with LISTEN_FDS=1 (fd 3).
@Suite(.enabled(if: SystemTool.available("systemd-socket-activate"), "systemd-socket-activate is not installed"))
struct SocketActivationTests {
    @Test func aClientGetsTheStateThroughThePassedSocketAndTheFileStays() throws {
        let directory = try TemporaryDirectory(prefix: "bsa", short: true)
        let socket = directory.file("beacond.sock")
        let capture = directory.file("race.btsnoop")
        #expect(try BeacondProcess.run(["example-capture", capture]).status == 0)

        // Started with posix_spawn, not Process: the daemon runs for the whole test, and it must
        // not inherit the pipes other tests' processes are writing to (fds 3 and up are closed).
        let logFile = directory.file("daemon.log")
        let process = try SpawnedProcess(
            try #require(SystemTool.path("systemd-socket-activate")),
            [
                "-l", socket, BeacondProcess.executable.path, "run", "--backend", "replay", "--replay", capture,
                "--speed", "20", "--loop", "--socket", socket, "--state-dir", directory.path,
            ], log: logFile)
        defer { if process.isRunning { kill(process.pid, SIGKILL) } }
        #expect(blockingWaitUntil(within: 10) { FileManager.default.fileExists(atPath: socket) }, "no socket")

        // The first connection starts the daemon, which answers it on the socket it was passed.
        let status = try BeacondProcess.run(["status", "--socket", socket, "--json", "--timeout", "20"])
        #expect(status.status == 0, "\(status.stderr)")
        let object = try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any]
        let state = object?["state"] as? [String: Any]
        #expect(object?["type"] as? String == "status" && state?["mode"] is String, "\(status.stdout)")

        // The daemon is the process systemd-socket-activate exec'd: SIGTERM stops it cleanly, and
        // the socket file, which it did not create, stays for the next start.
        kill(process.pid, SIGTERM)
        let stopped = blockingWaitUntil(within: 10) { !process.isRunning }
        let stderr = (try? String(contentsOfFile: logFile, encoding: .utf8)) ?? ""
        try #require(stopped, "still running 10 s after SIGTERM: \(stderr.suffix(600))")
        let exit = process.exitCode.map { "exit \($0)" } ?? "ended by a signal"
        #expect(process.exitCode == 0, "\(exit): \(stderr.suffix(600))")
        #expect(stderr.contains("(inherited fd 3"), "the daemon bound a socket of its own: \(stderr.suffix(600))")
        var info = stat()
        #expect(lstat(socket, &info) == 0 && info.st_mode & S_IFMT == S_IFSOCK, "the socket file is gone")
        #expect(throws: (any Error).self) { _ = try LineClient(path: socket) }
    }
}

/// A child started with posix_spawn: standard input from /dev/null, standard output and error
/// appended to `log`, signals unblocked and at their defaults, and every other descriptor closed
/// (by python3, which then execs the program: Swift's Glibc has no addclosefrom_np).
final class SpawnedProcess {
    let pid: pid_t
    private var status: Int32?

    init(_ path: String, _ arguments: [String], log: String) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var attributes = ProcessFigures.spawnAttributesWithDefaultSignals()
        defer { posix_spawnattr_destroy(&attributes) }
        let python = "/usr/bin/python3"
        let closeAndExec =
            "import os, sys; os.closerange(3, os.sysconf('SC_OPEN_MAX')); os.execv(sys.argv[1], sys.argv[1:])"
        let argv = ([python, "-c", closeAndExec, path] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var child: pid_t = 0
        let result = posix_spawn(&child, python, &actions, &attributes, argv, environ)
        guard result == 0 else { throw TestSupportError("posix_spawn \(python): errno \(result)") }
        pid = child
    }

    /// False once the child has exited (and been reaped here).
    var isRunning: Bool {
        guard status == nil else { return false }
        var raw: Int32 = 0
        let reaped = waitpid(pid, &raw, WNOHANG)
        if reaped == pid { status = raw } else if reaped < 0 { status = -1 }
        return status == nil
    }

    /// The exit code, nil while running or when a signal ended it.
    var exitCode: Int32? {
        guard let status, status >= 0, status & 0x7f == 0 else { return nil }
        return (status >> 8) & 0xff
    }
}
