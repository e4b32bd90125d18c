import BeacondTestSupport
import Foundation
import Testing

/// The Unix socket at the descriptor limit: the daemon runs under `prlimit --nofile=64:64` and gets
/// more clients than it has descriptors. It serves as many as leave room for its own files (each
/// client takes two descriptors, NIO's and the direct-write duplicate), refuses the rest
/// with "server full" and never spins, and a replay it reopens still finds a descriptor (before,
/// the clients took them all and the daemon stopped: "cannot open: Too many open files"). Once
/// they have gone a new client is served at once, and every descriptor has come back.
@Suite(.serialized) struct SocketAcceptBackoffTests {
    @Test func clientsBeyondTheDescriptorLimitNeitherSpinNorLockOut() throws {
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/prlimit") else {
            print("skipped: needs root (unshare -m) and /usr/bin/prlimit to start the daemon with 64 descriptors")
            return
        }
        let daemon = try DaemonProcess(
            ["--backend", "replay", "--replay", ReplayCommandTests.example, "--speed", "1", "--loop"],
            launcherScript: "exec /usr/bin/prlimit --nofile=64:64 -- \"$@\"")
        #expect(daemon.waitForLog("scanner replay up"))
        let cap = try #require(Self.loweredCap(daemon.logText), "\(daemon.logText.prefix(1500))")
        // At most (64 − 16 kept) / 2, fewer as the daemon's own descriptors at start take room.
        #expect(cap >= 1 && cap <= 24)
        let descriptorsAtRest = Self.openDescriptors(daemon.pid)
        var held: [LineClient] = []
        for _ in 0..<100 {
            guard let client = try? LineClient(path: daemon.socket) else { break }
            held.append(client)
        }
        #expect(held.count == 100)
        let cpuBefore = try CaptureTimeExtremesTests.cpuSeconds(daemon.pid)
        let wallStart = Date()
        Thread.sleep(forTimeInterval: 3)
        let cpu = try CaptureTimeExtremesTests.cpuSeconds(daemon.pid) - cpuBefore
        let share = cpu / Date().timeIntervalSince(wallStart)
        print("socket, 100 clients against 64 descriptors: \(String(format: "%.1f", share * 100)) % of a core")
        #expect(share < 0.2)
        // Each gets its first line: a hello, or the refusal.
        let first = held.map { $0.next() }
        let served = first.count { $0?["type"] as? String == "hello" }
        let refused = first.count { ($0?["error"] as? String)?.hasPrefix("server full: \(cap) clients") == true }
        #expect(served == cap && refused == 100 - cap, "served \(served), refused \(refused), cap \(cap)")
        #expect(daemon.process.isRunning, "\(daemon.logText.suffix(1000))")

        held = []
        // Their places come free as the daemon sees them go: a newcomer is served within 3 s.
        let started = Date()
        var hello: [String: Any]?
        while hello == nil, Date().timeIntervalSince(started) < 3 {
            hello = try LineClient(path: daemon.socket).next(type: "hello")
        }
        let answeredIn = Date().timeIntervalSince(started)
        #expect(hello != nil && answeredIn < 3, "hello after \(answeredIn) s")
        // Every client that left gave both its descriptors back.
        let settled = DaemonRemoteTests.waitFor(timeout: 10) {
            (Self.openDescriptors(daemon.pid) ?? .max) <= (descriptorsAtRest ?? 0) + 2
        }
        #expect(
            settled,
            """
            descriptors: \(Self.openDescriptors(daemon.pid) ?? -1), at rest \(descriptorsAtRest ?? -1): \
            \(Self.descriptorKinds(daemon.pid))
            """)
        let stopped = daemon.stop(timeout: 15)
        #expect(stopped != nil, "\(daemon.logText.suffix(1500))")
    }

    /// What `pid`'s descriptors are ("socket:[…]", paths), for a failure's message.
    static func descriptorKinds(_ pid: Int32) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
        return names.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)") }
            .map { $0.hasPrefix("socket:") ? "socket" : $0 }.sorted()
    }

    /// N in the daemon's "max_clients 1024 lowered to N" line.
    static func loweredCap(_ log: String) -> Int? {
        guard let range = log.range(of: "max_clients 1024 lowered to ") else { return nil }
        return Int(log[range.upperBound...].prefix { $0.isNumber })
    }

    /// Descriptors open in `pid` now.
    static func openDescriptors(_ pid: Int32) -> Int? {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd"))?.count
    }
}
