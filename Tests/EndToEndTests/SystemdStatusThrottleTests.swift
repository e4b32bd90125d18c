import BeacondTestSupport
import Foundation
import Testing

/// The daemon's `STATUS=` line under a storm of publications: at most one a second (each is a
/// datagram sent from the hub's loop), and the latest state's line still arrives.
@Suite struct SystemdStatusThrottleTests {
    /// A bound datagram socket standing in for systemd's notify socket.
    final class NotifyListener {
        let fd: Int32
        let path: String

        init() throws {
            path = BeacondProcess.temporaryFile("notify-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
            fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            try #require(fd >= 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            let bytes = Array(path.utf8) + [0]
            try #require(bytes.count <= MemoryLayout.size(ofValue: address.sun_path), "path too long: \(path)")
            withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            try #require(bound == 0, "bind \(path): \(String(cString: strerror(errno)))")
        }

        deinit {
            close(fd)
            unlink(path)
        }

        /// Every datagram that arrives within `seconds`, with its arrival time (seconds from the start).
        func collect(for seconds: Double) -> [(time: Double, text: String)] {
            var received: [(Double, String)] = []
            let start = Date()
            var buffer = [UInt8](repeating: 0, count: 4096)
            while Date().timeIntervalSince(start) < seconds {
                var probe = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&probe, 1, 20) > 0 else { continue }
                let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if count > 0 {
                    received.append(
                        (Date().timeIntervalSince(start), String(decoding: buffer[..<count], as: UTF8.self)))
                }
            }
            return received
        }
    }

    static func seq(_ daemon: DaemonProcess) -> Int? {
        ((try? daemon.status())?["state"] as? [String: Any])?["seq"] as? Int
    }

    @Test func aStormOfPublicationsSendsAtMostOneStatusLineASecond() throws {
        let systemd = try NotifyListener()
        let daemon = try DaemonProcess(
            ["--backend", "replay", "--replay", ReplayCommandTests.example, "--speed", "1000", "--loop"],
            environment: ["NOTIFY_SOCKET": systemd.path])
        defer { _ = daemon.stop() }
        #expect(daemon.waitForLog("listening"))
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
}
