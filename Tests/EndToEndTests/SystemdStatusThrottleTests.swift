import BeacondTestSupport
import Foundation
import Testing

/// The daemon's `STATUS=` line under a storm of publications: at most one a second (each is a
/// datagram sent from the hub's loop), and the latest state's line still arrives.
@Suite struct SystemdStatusThrottleTests {
    static func seq(_ daemon: DaemonProcess) -> Int? {
        ((try? daemon.status())?["state"] as? [String: Any])?["seq"] as? Int
    }

    /// A looping replay daemon at `speed` that notifies `systemd`, listening.
    static func daemon(speed: String, notifying systemd: FakeNotifySocket) throws -> DaemonProcess {
        let daemon = try DaemonProcess(
            ["--backend", "replay", "--replay", ReplayCommandTests.example, "--speed", speed, "--loop"],
            environment: ["NOTIFY_SOCKET": systemd.environmentValue])
        #expect(daemon.waitForLog("listening"))
        return daemon
    }

    @Test func aStormOfPublicationsSendsAtMostOneStatusLineASecond() throws {
        let systemd = try FakeNotifySocket(abstract: false)
        let daemon = try Self.daemon(speed: "1000", notifying: systemd)
        defer { _ = daemon.stop() }
        let before = Self.seq(daemon)
        let datagrams = systemd.collect(for: 3.5)
        let after = Self.seq(daemon)
        let statuses = datagrams.filter { $0.text.hasPrefix("STATUS=") }
        let published = (after ?? 0) - (before ?? 0)
        #expect(published >= 20, "the replay must publish a storm: \(published) publications in 3.5 s")
        // At most one per second, plus the one that opens the window: 3.5 s gives at most 5.
        #expect(statuses.count >= 2 && statuses.count <= 5, "\(statuses.map(\.time)) for \(published) publications")
        for (earlier, later) in zip(statuses, statuses.dropFirst()) {
            #expect(later.time - earlier.time > 0.8, "two status lines \(later.time - earlier.time) s apart")
        }
        #expect(statuses.allSatisfy { $0.text.contains(" beacons") }, "\(statuses.map(\.text))")
    }

    /// STOPPING=1 goes as the graceful shutdown begins (before the socket's clients get their bye,
    /// which comes after the scanner and the hub have stopped), and only once.
    @Test func stoppingIsSentOnceAsTheShutdownBegins() throws {
        let systemd = try FakeNotifySocket(abstract: false)
        let daemon = try Self.daemon(speed: "1", notifying: systemd)
        defer { _ = daemon.stop() }
        let client = try LineClient(path: daemon.socket)
        #expect(client.next(type: "state") != nil)
        #expect(kill(daemon.pid, SIGTERM) == 0)
        #expect(client.next(type: "bye") != nil)
        let byeAt = Date().timeIntervalSince1970
        #expect(daemon.waitForExit())
        // Every datagram it sent (the kernel's arrival times), until two quiet seconds.
        var stopping: [Double] = []
        while let datagram = systemd.receiveStamped() {
            if datagram.text == "STOPPING=1" { stopping.append(datagram.time) }
        }
        #expect(stopping.count == 1, "\(stopping)")
        #expect((stopping.first ?? .infinity) <= byeAt, "STOPPING=1 at \(stopping), bye read at \(byeAt)")
    }
}
