import BeacondTestSupport
import Foundation
import Testing

@testable import BeacondCore

/// A datagram socket bound where a test's notifier sends, standing in for systemd.
final class FakeNotifySocket {
    let fd: Int32
    let address: NotifySocketAddress
    /// What `NOTIFY_SOCKET` would hold.
    let environmentValue: String

    init(abstract: Bool) throws {
        let name = "beacond-notify-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        if abstract {
            address = .abstract(name)
            environmentValue = "@" + name
        } else {
            let path = NSTemporaryDirectory() + "/" + name
            address = .path(path)
            environmentValue = path
        }
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        try #require(fd >= 0)
        // Built here by hand rather than with UnixSocketAddress, so the test checks the notifier's encoding:
        // an abstract name is a leading NUL, then the name, with no trailing NUL counted.
        var storage = sockaddr_un()
        storage.sun_family = sa_family_t(AF_UNIX)
        let bytes = abstract ? [0] + Array(name.utf8) : Array(environmentValue.utf8)
        withUnsafeMutableBytes(of: &storage.sun_path) { $0.copyBytes(from: bytes) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count)
        let bound = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        try #require(bound == 0, "bind: \(String(cString: strerror(errno)))")
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit {
        close(fd)
        if case .path(let path) = address { unlink(path) }
    }

    /// The next datagram, or nil after two seconds.
    func receive() -> String? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard count >= 0 else { return nil }
        return String(decoding: buffer[..<count], as: UTF8.self)
    }
}

@Suite struct SystemdTests {
    @Test(arguments: [false, true])
    func notifierSendsReadyStatusWatchdogAndStopping(abstract: Bool) throws {
        let systemd = try FakeNotifySocket(abstract: abstract)
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": systemd.environmentValue])
        #expect(notifier.isEnabled)
        #expect(notifier.address == systemd.address)

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
