import BeacondTestSupport
import Foundation
import Testing

/// A broker that drops connection attempts (a venue network gone, a firewall) leaves `mosquitto_connect`
/// blocked for the kernel's two minutes of SYN retries: the daemon must still stop promptly on SIGTERM,
/// and serve its kiosks meanwhile.
@Suite struct MqttBlackholeTests {
    /// A loopback listener whose accept queue is full and never drained: the kernel drops further SYNs,
    /// so a connection attempt hangs as against a black hole.
    final class Blackhole {
        let listener: Int32
        let filler: Int32
        let port: Int

        init() throws {
            let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            let filler = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            self.listener = listener
            self.filler = filler
            try #require(listener >= 0 && filler >= 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) }
            }
            try #require(bound == 0 && listen(listener, 0) == 0)
            _ = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
            }
            let port = Int(UInt16(bigEndian: address.sin_port))
            self.port = port
            // The one connection the queue holds.
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(filler, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            try #require(connected == 0, "filler connect: \(String(cString: strerror(errno)))")
        }

        deinit {
            close(filler)
            close(listener)
        }
    }

    @Test func aBrokerThatDropsConnectionAttemptsDoesNotHoldUpTheStop() throws {
        let blackhole = try Blackhole()
        let daemon = try DaemonProcess(
            [
                "--backend", "replay", "--replay", ReplayCommandTests.example, "--speed", "1", "--loop",
                "--mqtt-url", "mqtt://127.0.0.1:\(blackhole.port)", "--mqtt-node", "stuck",
            ])
        #expect(daemon.waitForLog("listening on"))
        // The kiosk's socket answers while the MQTT thread waits on its connect: status says so.
        #expect(
            blockingWaitUntil(within: 5, intervalMicros: 50_000) {
                ((try? daemon.status())?["mqtt"] as? [String: Any])?["connected"] as? Bool == false
            })
        #expect((try? daemon.status())?["state"] != nil)
        let took = daemon.stop(timeout: 20)
        #expect(took != nil && (took ?? 99) < 8, "SIGTERM → exit took \(took.map { "\($0) s" } ?? "over 20 s")")
        #expect(daemon.exitStatus == 0)
        #expect(daemon.logText.contains("still in progress; not waiting for it"), "\(daemon.logText)")
    }
}
