import Foundation
import Glibc

/// Runs the beacond binary to its end and measures it as /usr/bin/time does: wall seconds and the
/// peak resident memory from `wait4`'s rusage. Linux carries a process's peak RSS across exec, and a
/// child spawned straight from the test starts from the test process's own peak (hundreds of MB);
/// so a small Python parent forks beacond and reports its rusage (its own peak, about 10 MB, is the
/// floor of the figure).
struct MeasuredRun {
    var status: Int32
    var stderr: String
    var seconds: Double
    /// ru_maxrss: the child's peak resident set, kilobytes.
    var peakKilobytes: Int

    /// Runs `beacond arguments…`; kills it after `timeout` seconds (then `status` is 128 + 9).
    static let measure = """
        import os, sys
        pid = os.fork()
        if pid == 0:
            os.execv(sys.argv[2], sys.argv[2:])
        _, status, usage = os.wait4(pid, 0)
        with open(sys.argv[1], "w") as out:
            out.write("%d %d" % (os.waitstatus_to_exitcode(status), usage.ru_maxrss))
        """

    static func beacond(_ arguments: [String], timeout: Double = 30) throws -> MeasuredRun {
        let tool = "/usr/bin/python3"
        let resultPath = BeacondProcess.temporaryFile("measured-\(UUID().uuidString.prefix(8))")
        defer { unlink(resultPath) }
        let commandLine = ["-c", measure, resultPath, BeacondProcess.executable.path] + arguments
        var errPipe: [Int32] = [-1, -1]
        guard pipe(&errPipe) == 0 else { throw POSIXError(.EMFILE) }
        // Close-on-exec, so no other child spawned meanwhile holds the write end open.
        _ = fcntl(errPipe[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(errPipe[1], F_SETFD, FD_CLOEXEC)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, errPipe[1], 2)
        var attributes = ProcessFigures.spawnAttributesWithDefaultSignals()
        defer { posix_spawnattr_destroy(&attributes) }
        let argv = ([tool] + commandLine).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let started = Date()
        let spawned = posix_spawn(&pid, tool, &actions, &attributes, argv, environ)
        close(errPipe[1])
        guard spawned == 0 else {
            close(errPipe[0])
            throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EINVAL)
        }
        // The child's stderr is read on a thread, so a chatty child never blocks on a full pipe.
        let reader = ErrReader(fd: errPipe[0])
        let watchdog = DispatchWorkItem { kill(pid, SIGKILL) }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout, execute: watchdog)
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 && errno == EINTR {}
        watchdog.cancel()
        let seconds = Date().timeIntervalSince(started)
        let fields = ((try? String(contentsOfFile: resultPath, encoding: .utf8)) ?? "").split(separator: " ")
        guard fields.count == 2, let exit = Int32(fields[0]), let peak = Int(fields[1]) else {
            throw POSIXError(.ECHILD)
        }
        // A negative exit code is a signal: as the shell shows it.
        return MeasuredRun(
            status: exit < 0 ? 128 - exit : exit, stderr: reader.text(), seconds: seconds, peakKilobytes: peak)
    }

    private final class ErrReader: @unchecked Sendable {
        private var data = Data()
        private let done = DispatchSemaphore(value: 0)

        init(fd: Int32) {
            Thread.detachNewThread { [self] in
                var chunk = [UInt8](repeating: 0, count: 65_536)
                while true {
                    let count = read(fd, &chunk, chunk.count)
                    if count < 0 && errno == EINTR { continue }
                    guard count > 0 else { break }
                    data.append(contentsOf: chunk[0..<count])
                }
                close(fd)
                done.signal()
            }
        }

        func text() -> String {
            done.wait()
            return String(decoding: data, as: UTF8.self)
        }
    }
}
