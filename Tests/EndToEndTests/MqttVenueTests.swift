import BeacondTestSupport
import Foundation
import Testing

/// Issue 16 against a real Mosquitto: two nodes' retained states and statuses, the last will, a broker
/// outage, and `beacond venue`.
@Suite(
    .serialized,
    .enabled(if: MosquittoBroker.available, "mosquitto and mosquitto-clients are missing: `make deps` installs them"))
struct MqttVenueTests {
    static var example: String { ReplayCommandTests.example }

    static func json(_ text: String?) -> [String: Any]? {
        guard let text else { return nil }
        return (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any]
    }

    static func mqttStatus(_ daemon: DaemonProcess) -> [String: Any]? {
        (try? daemon.status())?["mqtt"] as? [String: Any]
    }

    static func venue(_ broker: MosquittoBroker) throws -> [String: [String: Any]] {
        let result = try BeacondProcess.run(["venue", "--mqtt-url", broker.url, "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let object = try #require(Self.json(result.stdout))
        let nodes = try #require(object["nodes"] as? [[String: Any]])
        return Dictionary(
            uniqueKeysWithValues: nodes.compactMap { node in (node["node"] as? String).map { ($0, node) } })
    }

    @Test func twoNodesPublishRetainedStatesAndTheLastWillMarksAKilledOne() throws {
        let broker = try MosquittoBroker()
        let replay = ["--backend", "replay", "--replay", Self.example, "--speed", "1", "--loop"]
        let east = try DaemonProcess(replay + ["--mqtt-url", broker.url, "--mqtt-node", "east"])
        let west = try DaemonProcess(replay + ["--mqtt-url", broker.url, "--mqtt-node", "west"])
        #expect(east.waitForLog("mqtt: connected to \(broker.url) as node east"))
        #expect(west.waitForLog("mqtt: connected to \(broker.url) as node west"))

        var states: [String: String] = [:]
        #expect(
            blockingWaitUntil(within: 10, intervalMicros: 200_000) {
                states = (try? broker.retained("georacing/+/state", count: 2)) ?? [:]
                return states.count == 2
            })
        for node in ["east", "west"] {
            let state = try #require(Self.json(states["georacing/\(node)/state"]), "\(states)")
            #expect(state["type"] as? String == "state")
            #expect(state["node"] as? String == node)
            #expect(state["mode"] is String)
            #expect(state["seq"] is Int)
            #expect(state.keys.contains("race_control"))
            // Issue 25: the run id and when this copy was sent (docs/mqtt.md).
            #expect((state["run"] as? String)?.count == 16)
            #expect(abs((state["sent"] as? Double ?? 0) - Date().timeIntervalSince1970) < 60)
        }
        let statuses = try broker.retained("georacing/+/status", count: 2)
        #expect(statuses == ["georacing/east/status": "online", "georacing/west/status": "online"])

        // Sightings: one topic per beacon key, not retained, the protocol's beacon message.
        let sightings = try BeacondProcess.run(
            URL(fileURLWithPath: MosquittoBroker.subscriber),
            ["-h", "127.0.0.1", "-p", String(broker.port), "-t", "georacing/east/beacons/+", "-v", "-C", "1"])
        let line = try #require(sightings.lines.first, "no sighting within 15 s")
        let (topic, payload) = (line.prefix { $0 != " " }, line.drop { $0 != " " }.dropFirst())
        #expect(topic.wholeMatch(of: /georacing\/east\/beacons\/(zone-[0-9]+|source-[0-9]+)-[0-9A-F]{12}/) != nil)
        let beacon = try #require(Self.json(String(payload)))
        #expect(beacon["type"] as? String == "beacon")
        #expect(beacon["node"] as? String == "east")
        #expect((beacon["beacon"] as? [String: Any])?["addr"] is String)
        #expect(try broker.retained("georacing/east/beacons/+").isEmpty)

        // `beacond venue --json` sees both, online, with the mode each daemon shows on its socket.
        let nodes = try Self.venue(broker)
        #expect(Set(nodes.keys) == ["east", "west"])
        #expect(nodes["east"]?["online"] as? Bool == true)
        #expect(nodes["west"]?["alarm"] as? Bool == false)

        // SIGKILL: no clean disconnect, so the broker publishes the last will.
        #expect(west.stop(signal: SIGKILL) != nil)
        #expect(
            blockingWaitUntil(within: 10, intervalMicros: 200_000) {
                (try? broker.retained("georacing/west/status"))?["georacing/west/status"] == "offline"
            })
        let afterKill = try Self.venue(broker)
        #expect(afterKill["west"]?["offline"] as? Bool == true)
        #expect(afterKill["west"]?["alarm"] as? Bool == true)
        #expect(afterKill["east"]?["alarm"] as? Bool == false)
        let table = try BeacondProcess.run(["venue", "--mqtt-url", broker.url, "--once"])
        #expect(table.status == 0)
        #expect(table.lines.contains { $0.hasPrefix("! west") && $0.contains("NO") })
        #expect(table.stdout.contains("2 nodes, 1 alarm"))

        // A graceful stop says offline itself.
        #expect(east.stop() != nil)
        #expect(try broker.retained("georacing/east/status")["georacing/east/status"] == "offline")
    }

    @Test func aBrokerOutageCoalescesStatesAndNeverDelaysTheKiosk() throws {
        let broker = try MosquittoBroker()
        let scratch = try TemporaryDirectory(prefix: "beacond-mqtt-remote")
        let remote = try scratch.write("state.json", #"{"global_mode":"GREEN","message":"m0"}"#)
        let daemon = try DaemonProcess([
            "--backend", "replay", "--replay", Self.example, "--speed", "max", "--remote-url", "file://" + remote,
            "--poll-interval", "0.2", "--mqtt-url", broker.url, "--mqtt-node", "kiosk-1",
        ])
        func retainedMessage() -> String? {
            let state = Self.json((try? broker.retained("georacing/kiosk-1/state"))?["georacing/kiosk-1/state"])
            return (state?["remote"] as? [String: Any])?["message"] as? String
        }
        #expect(blockingWaitUntil(within: 10, intervalMicros: 100_000) { retainedMessage() == "m0" })
        let kiosk = try LineClient(path: daemon.socket)
        _ = kiosk.next(type: "state")

        broker.stop()
        for (index, message) in ["m1", "m2", "m3"].enumerated() {
            let written = Date()
            try scratch.write("state.json.new", #"{"global_mode":"YELLOW","message":"\#(message)"}"#)
            #expect(rename(scratch.file("state.json.new"), remote) == 0)
            // The kiosk sees each change at the poll's pace (0.2 s), not the broker's.
            var seen: String?
            while seen != message, let state = kiosk.next(type: "state") {
                seen = (state["remote"] as? [String: Any])?["message"] as? String
            }
            #expect(seen == message)
            #expect(Date().timeIntervalSince(written) < 1.5, "\(message) reached the kiosk late")
            // The MQTT outbox has taken it: each state but the latest is counted as coalesced.
            #expect(
                blockingWaitUntil(within: 5, intervalMicros: 50_000) {
                    (Self.mqttStatus(daemon)?["coalesced_states"] as? Int ?? 0) >= index
                })
        }
        let status = try #require(Self.mqttStatus(daemon))
        #expect(status["connected"] as? Bool == false)
        #expect((status["coalesced_states"] as? Int ?? 0) >= 2)
        // The network thread has seen the broker go and retries (logged once) before it is back.
        #expect(daemon.waitForLog("retrying", timeout: 15), "\(daemon.logText.suffix(800))")
        try broker.start()

        // The broker lost its retained copy (no persistence): the latest state is sent on reconnect.
        #expect(blockingWaitUntil(within: 40, intervalMicros: 200_000) { retainedMessage() == "m3" })
        #expect(try broker.retained("georacing/kiosk-1/status")["georacing/kiosk-1/status"] == "online")
        let after = try #require(Self.mqttStatus(daemon))
        #expect(after["connected"] as? Bool == true)
        #expect((after["reconnects"] as? Int ?? 0) >= 1)
        // The retries were logged once per reason, not once per attempt.
        let warnings = daemon.logText.split(separator: "\n").filter { $0.contains("mqtt:") && $0.contains("retrying") }
        #expect(warnings.count <= 2, "\(warnings)")
        #expect(daemon.stop() != nil)
    }
}
