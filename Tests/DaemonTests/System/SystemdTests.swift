import BeacondTestSupport
import CLinux
import Foundation
import Testing

@testable import BeacondClient
@testable import BeacondCore

@Suite struct SystemdTests {
    @Test(arguments: [false, true])
    func notifierSendsReadyStatusWatchdogAndStopping(abstract: Bool) throws {
        let systemd = try FakeNotifySocket(abstract: abstract)
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": systemd.environmentValue])
        #expect(notifier.isEnabled)
        #expect(notifier.address == (abstract ? .abstract(systemd.name) : .path(systemd.name)))

        #expect(notifier.ready(status: "green, 2 beacons"))
        #expect(systemd.receive() == "READY=1\nSTATUS=green, 2 beacons")
        #expect(notifier.status("red flag\nzone 3"))
        #expect(systemd.receive() == "STATUS=red flag zone 3")
        #expect(notifier.watchdog())
        #expect(systemd.receive() == "WATCHDOG=1")
        #expect(notifier.reloading(monotonicMicros: 123_456))
        #expect(systemd.receive() == "RELOADING=1\nMONOTONIC_USEC=123456")
        #expect(notifier.stopping())
        #expect(systemd.receive() == "STOPPING=1")
    }

    @Test func notifierDoesNothingWithoutASocket() {
        for environment in [
            [:], ["NOTIFY_SOCKET": ""], ["NOTIFY_SOCKET": "relative/path"],
            ["NOTIFY_SOCKET": "vsock:2:1234"], ["NOTIFY_SOCKET": "@"],
        ] {
            let notifier = SystemdNotifier(environment: environment)
            #expect(!notifier.isEnabled, "\(environment)")
            #expect(!notifier.ready(), "\(environment)")
        }
        #expect(NotifySocketAddress("/" + String(repeating: "x", count: 200)) == nil)
    }

    @Test func notifierReportsASocketNobodyListensOn() {
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": "/nonexistent/beacond-notify"])
        #expect(notifier.isEnabled)
        #expect(!notifier.watchdog())
    }

    @Test func watchdogIntervalIsHalfThePeriod() {
        let pid = getpid()
        #expect(SystemdNotifier.watchdogInterval(environment: ["WATCHDOG_USEC": "30000000"], pid: pid) == 15_000_000)
        #expect(
            SystemdNotifier.watchdogInterval(
                environment: ["WATCHDOG_USEC": "20000000", "WATCHDOG_PID": "\(pid)"], pid: pid) == 10_000_000)
        #expect(
            SystemdNotifier.watchdogInterval(
                environment: ["WATCHDOG_USEC": "20000000", "WATCHDOG_PID": "\(pid + 1)"], pid: pid) == nil)
        #expect(SystemdNotifier.watchdogInterval(environment: ["WATCHDOG_USEC": "0"], pid: pid) == nil)
        #expect(SystemdNotifier.watchdogInterval(environment: ["WATCHDOG_USEC": "-5"], pid: pid) == nil)
        #expect(SystemdNotifier.watchdogInterval(environment: ["WATCHDOG_USEC": "soon"], pid: pid) == nil)
        #expect(SystemdNotifier.watchdogInterval(environment: [:], pid: pid) == nil)
    }

    @Test func listenFDsAreTakenOnlyWhenMeantForUs() {
        let pid = getpid()
        let mine = ListenFDs.parse(
            environment: ["LISTEN_PID": "\(pid)", "LISTEN_FDS": "2", "LISTEN_FDNAMES": "beacond.socket:extra"],
            pid: pid)
        #expect(mine.fds == [3, 4])
        #expect(mine.names == ["beacond.socket", "extra"])
        let unnamed = ListenFDs.parse(environment: ["LISTEN_PID": "\(pid)", "LISTEN_FDS": "1"], pid: pid)
        #expect(unnamed == ListenFDs(fds: [3], names: ["unknown"]))
        let parents = ListenFDs.parse(environment: ["LISTEN_PID": "\(pid + 1)", "LISTEN_FDS": "1"], pid: pid)
        #expect(parents.isEmpty)
        for bad in [
            ["LISTEN_FDS": "1"], ["LISTEN_PID": "\(pid)", "LISTEN_FDS": "0"],
            ["LISTEN_PID": "\(pid)", "LISTEN_FDS": "x"], ["LISTEN_PID": "me", "LISTEN_FDS": "1"],
            ["LISTEN_PID": "\(pid)", "LISTEN_FDS": "100000"],
        ] {
            #expect(ListenFDs.parse(environment: bad, pid: pid).isEmpty, "\(bad)")
        }
    }

    @Test func inheritedUnsetsTheVariablesEvenWhenTheyAreNotOurs() {
        let unset = UnsetRecorder()
        let fds = ListenFDs.inherited(
            environment: ["LISTEN_PID": "1", "LISTEN_FDS": "1"], pid: getpid(),
            unsetEnvironment: true, unset: unset.record)
        #expect(fds.isEmpty)
        #expect(unset.names.sorted() == ["LISTEN_FDNAMES", "LISTEN_FDS", "LISTEN_PID"])
        let kept = UnsetRecorder()
        _ = ListenFDs.inherited(environment: [:], pid: getpid(), unsetEnvironment: false, unset: kept.record)
        #expect(kept.names.isEmpty)
    }

    @Test func findsTheListeningUnixSocketSystemdPassed() throws {
        let path = NSTemporaryDirectory() + "/beacond-listen-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        defer { unlink(path) }
        let stream = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        let datagram = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        var pipeFDs: [Int32] = [0, 0]
        try #require(pipe(&pipeFDs) == 0)
        defer { for fd in [stream, datagram, pipeFDs[0], pipeFDs[1]] { close(fd) } }
        var (storage, length) = UnixSocketAddress.make(.path(path))
        let bound = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(stream, $0, length) }
        }
        try #require(bound == 0)
        #expect(!ListenFDs.isUnixStreamListener(stream), "bound but not listening yet")
        try #require(listen(stream, 8) == 0)
        #expect(ListenFDs.isUnixStreamListener(stream))
        #expect(ListenFDs.isUnixStreamListener(stream, path: path))
        #expect(!ListenFDs.isUnixStreamListener(stream, path: path + ".other"))
        #expect(!ListenFDs.isUnixStreamListener(datagram))
        #expect(!ListenFDs.isUnixStreamListener(pipeFDs[0]))
        let passed = ListenFDs(fds: [pipeFDs[0], datagram, stream], names: ["a", "b", "c"])
        #expect(passed.unixStreamListener(path: path) == stream)
        #expect(passed.unixStreamListener(path: "/elsewhere.sock") == nil)
    }
}

/// Records which variables `ListenFDs.inherited` removes, without touching the real environment.
final class UnsetRecorder: @unchecked Sendable {
    var names: [String] = []
    var record: (String) -> Void { { self.names.append($0) } }
}
