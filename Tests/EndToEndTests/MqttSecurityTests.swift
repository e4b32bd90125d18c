import BeacondTestSupport
import Foundation
import Testing

/// Issue 16: TLS with a CA given in `mqtt.ca_file`, and a username with a password file, against a
/// real Mosquitto. A refusal is logged once, clearly, and never touches the kiosk's socket.
@Suite(
    .serialized,
    .enabled(
        if: MosquittoBroker.available && RemoteTestTools.hasOpenSSL,
        "mosquitto, mosquitto-clients or openssl are missing: `make deps` installs them"))
struct MqttSecurityTests {
    static var example: String { ReplayCommandTests.example }

    /// A daemon on the example capture with `mqtt` settings from a config file.
    static func daemon(_ scratch: TemporaryDirectory, node: String, mqtt: String) throws -> DaemonProcess {
        let config = try scratch.write("\(node).yaml", "mqtt:\n" + mqtt)
        return try DaemonProcess([
            "--config", config, "--backend", "replay", "--replay", example, "--speed", "max", "--mqtt-node", node,
        ])
    }

    static func warnings(_ daemon: DaemonProcess, containing text: String) -> Int {
        daemon.logText.split(separator: "\n").filter { $0.contains("warning") && $0.contains(text) }.count
    }

    @Test func tlsWithTheRightCAConnectsAndTheWrongOneIsRefused() throws {
        let scratch = try TemporaryDirectory(prefix: "beacond-mqtt-tls")
        let server = try MosquittoBroker.certificate(in: scratch.path, name: "venue-ca")
        let other = try MosquittoBroker.certificate(in: scratch.path, name: "other-ca")
        let broker = try MosquittoBroker(tls: server)

        let good = try Self.daemon(
            scratch, node: "tls-good", mqtt: "  url: \(broker.tlsURL)\n  ca_file: \(server.cert)\n")
        #expect(good.waitForLog("mqtt: connected to \(broker.tlsURL) as node tls-good"))
        let retained = try broker.retained("georacing/tls-good/status", extra: ["--cafile", server.cert])
        #expect(retained["georacing/tls-good/status"] == "online")

        let connectionsBefore = Self.connections(broker)
        let bad = try Self.daemon(scratch, node: "tls-bad", mqtt: "  url: \(broker.tlsURL)\n  ca_file: \(other.cert)\n")
        #expect(bad.waitForLog("TLS handshake with \(broker.tlsURL) failed"))
        // Several attempts (0.5 s, 1 s, 2 s apart) as the broker sees them, one warning.
        #expect(
            blockingWaitUntil(within: 10, intervalMicros: 50_000) { Self.connections(broker) >= connectionsBefore + 3 })
        #expect(Self.warnings(bad, containing: "TLS handshake") == 1, "\(bad.logText)")
        #expect(bad.logText.contains("certificate verify failed"), "\(bad.logText)")
        #expect(bad.logText.contains("check mqtt.ca_file"))
        // The kiosk's socket works regardless; the status says why MQTT is down.
        let status = try bad.status()
        #expect(status["state"] is [String: Any])
        let mqtt = try #require(status["mqtt"] as? [String: Any])
        #expect(mqtt["connected"] as? Bool == false)
        #expect((mqtt["last_error"] as? String)?.contains("TLS handshake") == true)
        #expect(try broker.retained("georacing/tls-bad/status", extra: ["--cafile", server.cert]).isEmpty)
        #expect(good.stop() != nil)
        #expect(bad.stop() != nil)
    }

    @Test func aUsernameWithAPasswordFileLogsInAndARefusedLoginIsLoggedOnce() throws {
        let scratch = try TemporaryDirectory(prefix: "beacond-mqtt-auth")
        let broker = try MosquittoBroker(users: ["beacond": "s3cret pass"])
        let right = try scratch.write("right", "s3cret pass\n")
        let wrong = try scratch.write("wrong", "guess\n")

        let good = try Self.daemon(
            scratch, node: "auth-good", mqtt: "  url: \(broker.url)\n  username: beacond\n  password_file: \(right)\n")
        #expect(good.waitForLog("mqtt: connected to \(broker.url) as node auth-good"))
        let retained = try broker.retained(
            "georacing/auth-good/state", extra: ["-u", "beacond", "-P", "s3cret pass"])
        #expect(retained["georacing/auth-good/state"] != nil)

        let bad = try Self.daemon(
            scratch, node: "auth-bad", mqtt: "  url: \(broker.url)\n  username: beacond\n  password_file: \(wrong)\n")
        #expect(bad.waitForLog("refused the connection"))
        // Several attempts as the broker sees them, one warning.
        #expect(blockingWaitUntil(within: 10, intervalMicros: 50_000) { Self.refusals(broker) >= 3 })
        #expect(Self.warnings(bad, containing: "refused the connection") == 1, "\(bad.logText)")
        #expect(bad.logText.contains("not authorised") || bad.logText.contains("not authorized"), "\(bad.logText)")
        // The broker saw the retries: more than one refused attempt (mosquitto names no client id there).
        #expect(Self.refusals(broker) >= 2, "\(broker.logText)")
        #expect(try bad.status()["state"] is [String: Any])
        #expect(good.stop() != nil)
        #expect(bad.stop() != nil)
    }

    /// Connections the broker has logged ("New connection from …"), TLS or not.
    static func connections(_ broker: MosquittoBroker) -> Int {
        broker.logText.split(separator: "\n").count { $0.contains("New connection from") }
    }

    /// Logins the broker refused.
    static func refusals(_ broker: MosquittoBroker) -> Int {
        broker.logText.split(separator: "\n").count { $0.contains("not authorised") }
    }
}
