import ArgumentParser
import BeacondTestSupport
import Foundation
import NIOCore
import Testing

@testable import BeacondClient
@testable import BeacondCore
@testable import beacond

#if canImport(Glibc)
import Glibc
#endif

/// Binding, stale and live sockets, systemd's socket, shutdown, and `beacond status`.
@Suite(.serialized) struct SocketLifecycleTests {
    @Test func staleSocketFileIsReplaced() throws {
        let path = SocketHarness.temporaryPath()
        // A socket file whose daemon died: bound, never listened on, closed without unlinking.
        Glibc.close(try bindUnixSocket(at: path, listen: false))
        #expect(UnixSocketPath(path).probe() == .stale)

        let harness = try SocketHarness(path: path)
        defer { harness.close() }
        let client = try harness.greetedClient()
        #expect(try client.request(#"{"cmd":"ping"}"#, reply: "pong").type == "pong")
        #expect(try #require(fileMode(path)) & 0o777 == 0o660)
    }

    @Test func liveDaemonMakesASecondServerRefuseToStart() throws {
        let first = try SocketHarness()
        defer { first.close() }
        let client = try first.greetedClient()
        let identity = UnixSocketPath(first.path).identity()

        let second = try SocketHarness(path: first.path, start: false)
        defer { second.close() }
        do {
            try second.server.start().wait()
            Issue.record("a second server started on a live socket")
        } catch let error as TrackStateServerError {
            guard case .alreadyRunning(let path) = error else {
                Issue.record("unexpected error: \(error)")
                return
            }
            #expect(path == first.path)
            #expect("\(error)".contains("already listening on \(first.path)"))
        }
        // The first daemon and its file are untouched.
        #expect(UnixSocketPath(first.path).identity() == identity)
        #expect(try client.request(#"{"cmd":"ping"}"#, reply: "pong").type == "pong")
        #expect(try first.greetedClient().request(#"{"cmd":"ping"}"#, reply: "pong").type == "pong")
    }

    @Test func fileThatIsNotASocketIsLeftAlone() throws {
        let path = SocketHarness.temporaryPath()
        #expect(FileManager.default.createFile(atPath: path, contents: Data("precious".utf8)))
        defer { unlink(path) }
        let harness = try SocketHarness(path: path, start: false)
        defer { harness.close() }
        #expect {
            try harness.server.start().wait()
        } throws: { error in
            guard case .notASocket = error as? TrackStateServerError else { return false }
            return true
        }
        #expect(FileManager.default.contents(atPath: path) == Data("precious".utf8))
    }

    @Test func socketPathLengthLimit() throws {
        // 108 bytes: one too many for sun_path.
        let tooLong = "/tmp/" + String(repeating: "a", count: 103)
        #expect(tooLong.utf8.count == 108)
        let harness = try SocketHarness(path: tooLong, start: false)
        defer { harness.close() }
        #expect {
            try harness.server.start().wait()
        } throws: { error in
            guard let error = error as? TrackStateServerError, case .invalidPath = error else { return false }
            return "\(error)".contains("108 bytes long") && "\(error)".contains("at most 107 bytes")
        }
        #expect(fileMode(tooLong) == nil)
        #expect(throws: TrackStateClient.ClientError.self) { try TrackStateClient(path: tooLong) }

        // 107 bytes is fine.
        let longest = "/tmp/beacond-\(getpid())-" + String(repeating: "b", count: 200)
        let exact = String(longest.prefix(107))
        let fits = try SocketHarness(path: exact)
        defer { fits.close() }
        #expect(try fits.greetedClient().request(#"{"cmd":"ping"}"#, reply: "pong").type == "pong")
    }

    @Test func shutdownSaysByeClosesClientsAndRemovesTheFile() throws {
        let harness = try SocketHarness()
        defer { harness.close() }
        let idle = try harness.greetedClient()
        let subscriber = try harness.greetedClient()
        _ = try subscriber.request(#"{"cmd":"subscribe","beacons":true}"#, reply: "subscribed")
        // A client that never read anything, not even its hello.
        let mute = try harness.connect()
        #expect(try harness.eventually { try harness.counters().clients == 3 })

        let started = Date()
        try harness.server.shutdown().wait()
        #expect(Date().timeIntervalSince(started) < 2)
        for client in [idle, subscriber] {
            #expect(try client.readMessage().type == "bye")
            #expect(client.isClosedByServer())
        }
        let (bye, before) = try mute.read(until: "bye")
        #expect(bye.type == "bye")
        #expect(before.map(\.type) == ["hello", "state"])
        #expect(mute.isClosedByServer())
        #expect(fileMode(harness.path) == nil)
        #expect(try harness.onLoop { harness.publisher.subscriberCount } == 0)
        // Nobody listens any more; a second shutdown is harmless.
        #expect(throws: TrackStateClient.ClientError.self) { try harness.connect() }
        try harness.server.shutdown().wait()
    }

    @Test func inheritedSocketIsServedAndNeverUnlinked() throws {
        let path = SocketHarness.temporaryPath()
        defer { unlink(path) }
        let descriptor = try bindUnixSocket(at: path, listen: true)
        let modeBefore = try #require(fileMode(path))
        let harness = try SocketHarness(path: path, inheritedDescriptor: descriptor)
        defer { harness.close() }

        let client = try harness.greetedClient()
        #expect(try client.request(#"{"cmd":"ping"}"#, reply: "pong").type == "pong")
        try harness.server.shutdown().wait()
        #expect(try client.readMessage().type == "bye")
        // systemd owns the file: still there, mode unchanged.
        #expect(fileMode(path) == modeBefore)
    }

    @Test func openFileLimitIsRaisedToTheHardLimit() {
        let soft = TrackStateServer.raiseOpenFileLimit()
        var limit = rlimit()
        getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
        #expect(soft == Int(clamping: limit.rlim_cur))
        #expect(limit.rlim_cur == limit.rlim_max || limit.rlim_max == rlim_t.max)
    }

    // MARK: beacond status

    @Test func statusCommandFetchesAndRendersTheStatus() throws {
        let harness = try SocketHarness()
        defer { harness.close() }
        try harness.ingest(zone: 3, mode: .redFlag, sequence: 42, address: 0xC0FFEE000003, rssi: -61)
        try harness.ingest(zone: 8, mode: .normal, address: 0xC0FFEE000008, rssi: -127)

        let status = try TrackStateClient.fetchStatus(path: harness.path)
        #expect(status.type == "status")
        #expect(status.text.first == "{" && !status.text.contains("\n"))
        #expect((status["server"] as? [String: Any])?["clients"] as? Int == 1)

        let report = StatusReport.render(try status.status())
        #expect(report.contains("state     red_flag  source beacon  zone 3"))
        #expect(report.contains("beacon zone 3 @ C0:FF:EE:00:00:03"))
        #expect(report.contains("scanner   test down"))
        #expect(report.contains("active overrides (1)"))
        #expect(report.contains("beacons heard (2)"))
        let rows = report.split(separator: "\n").filter {
            $0.contains("zone 3 @ C0:FF:EE:00:00:03") && $0.contains("dBm")
        }
        #expect(rows.count == 2)
        let row = String(rows.first ?? "")
        for cell in ["circuit", "red_flag", "-61 dBm", "10.0 s", "42", "0.0 s ago", "active"] {
            #expect(row.contains(cell), "\(cell) missing from \(row)")
        }
        #expect(report.contains("rejected: rssi"))
    }

    @Test func statusReportShowsTheKernelFilter() {
        var status = StatusMessage.sample()
        var hci = HCIBackendStatus(adapter: "hci0", mode: "legacy")
        hci.kernelFilter = KernelFilterStatus(state: "failed", probes: 2, lifts: 5, failure: "refused\u{1B}")
        status.hci = hci
        let report = StatusReport.render(status)
        #expect(report.contains("kernel filter failed (5 lifted for clients, 2 silence probes): refused\\u{1b}"))
    }

    @Test func statusReportEscapesControlCharacters() {
        var status = StatusMessage.sample()
        status.remote = RemoteReport(
            mode: "normal", reportedMode: nil, fresh: true, latched: false, restored: false,
            age: nil, message: "Go\u{1B}[2J now", lastError: nil)
        let report = StatusReport.render(status)
        #expect(!report.contains("\u{1B}"))
        #expect(report.contains("\"Go\\u{1b}[2J now\""))
    }

    /// A status from any socket is rendered without trapping, whatever its numbers (a number
    /// that does not fit its field does not decode: `ProtocolModelTests`).
    @Test func statusReportSurvivesExtremeNumbers() {
        var beacon = StatusMessage.sampleBeacon()
        beacon.rssi = Int.max
        beacon.distance = -Double.infinity
        beacon.ttlLeft = 1e300
        beacon.lastSeen = Double.nan
        beacon.sequence = Int.max
        beacon.active = true
        var other = beacon
        other.rssi = Int.min
        var status = StatusMessage.sample()
        status.uptime = Double.infinity
        status.state.seq = Int.max
        status.overrides = [beacon]
        status.overridesOmitted = Int.min
        status.beacons = [beacon, other]
        status.beaconsOmitted = Int.max
        let report = StatusReport.render(status)
        #expect(report.contains("up ?"))
        #expect(report.contains("active overrides (1)\n"))
        #expect(!report.contains("more not shown\n\nbeacons"))
        #expect(report.contains("  … \(Int.max) more not shown\n"))
    }

    @Test func statusWithoutDaemonFailsNamingTheSocket() throws {
        let path = SocketHarness.temporaryPath()
        do {
            _ = try TrackStateClient.fetchStatus(path: path)
            Issue.record("connected to nothing")
        } catch {
            #expect(error.description.contains("cannot connect to \(path)"))
            #expect(error.description.contains("is beacond running?"))
        }
        // A stale file (nobody listening) is reported the same way.
        Glibc.close(try bindUnixSocket(at: path, listen: false))
        defer { unlink(path) }
        let command = try StatusCommand.parse(["--socket", path, "--json"])
        #expect(throws: ExitCode(1)) { try command.run() }
    }
}
