import BeacondTestSupport
import Foundation
import Testing

/// Signals that come while `beacond run` is still starting up.
@Suite(.serialized) struct DaemonSignalTests {
    static var example: String { ReplayCommandTests.example }

    /// The signal mask of the process's main thread (`SigBlk` in /proc), nil once it is gone.
    static func blockedSignals(_ pid: Int32) -> UInt64? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("SigBlk:") {
            return UInt64(line.dropFirst("SigBlk:".count).trimmingCharacters(in: .whitespaces), radix: 16)
        }
        return nil
    }

    /// Spins until the daemon's first instruction has blocked SIGHUP, at most `timeout` seconds;
    /// false if it never did. The window before that (the dynamic loader) cannot be closed from inside.
    static func waitUntilBlocked(_ pid: Int32, timeout: Double = 5) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        let mask: UInt64 = 1 << (UInt64(SIGHUP) - 1) | 1 << (UInt64(SIGTERM) - 1) | 1 << (UInt64(SIGINT) - 1)
        while Date() < deadline {
            if let blocked = blockedSignals(pid), blocked & mask == mask { return true }
        }
        return false
    }

    @Test func anEarlySIGHUPNeitherKillsNorStallsTheDaemon() throws {
        for run in 0..<20 {
            let daemon = try DaemonProcess(["--backend", "replay", "--replay", Self.example, "--speed", "max"])
            let pid = daemon.process.processIdentifier
            #expect(Self.waitUntilBlocked(pid), "run \(run): SIGHUP never got blocked")
            kill(pid, SIGHUP)
            kill(pid, SIGHUP)
            #expect(daemon.waitForLog("listening on"), "run \(run): \(daemon.logText)")
            #expect(daemon.process.isRunning, "run \(run): the early SIGHUP killed the daemon")
            let seconds = daemon.stop(signal: SIGTERM)
            #expect(seconds != nil, "run \(run): SIGTERM did not stop the daemon")
            #expect(daemon.process.terminationReason == .exit)
            #expect(daemon.process.terminationStatus == 0, "run \(run): \(daemon.logText)")
        }
    }

    @Test func anEarlySIGTERMStopsTheDaemonGracefully() throws {
        let daemon = try DaemonProcess(["--backend", "replay", "--replay", Self.example, "--speed", "max"])
        let pid = daemon.process.processIdentifier
        #expect(Self.waitUntilBlocked(pid))
        kill(pid, SIGTERM)
        #expect(blockingWaitUntil(within: 10) { !daemon.process.isRunning })
        #expect(daemon.process.terminationReason == .exit)
        #expect(daemon.process.terminationStatus == 0, "\(daemon.logText)")
    }
}
