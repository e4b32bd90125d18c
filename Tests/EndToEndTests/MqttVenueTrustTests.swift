import BeacondTestSupport
import Foundation
import Testing

/// Issue 25, item 6, against a real Mosquitto: a 50 MB retained message never reaches `beacond venue`'s
/// memory (MQTT 5's Maximum Packet Size: the broker drops it for this client), and a broker set up as
/// docs/mqtt.md says (each node writes only its own topics) stops a forger outright.
@Suite(
    .serialized,
    .enabled(if: MosquittoBroker.available, "mosquitto and mosquitto-clients are missing: `make deps` installs them"))
struct MqttVenueTrustTests {
    static func nodes(_ stdout: String) throws -> [String: [String: Any]] {
        let object = try #require(MqttVenueTests.json(stdout), "\(stdout.prefix(500))")
        let nodes = try #require(object["nodes"] as? [[String: Any]])
        return Dictionary(
            uniqueKeysWithValues: nodes.compactMap { node in (node["node"] as? String).map { ($0, node) } })
    }

    @Test func aFiftyMegabyteRetainedStateStaysOutOfVenuesMemoryAndOutput() throws {
        let broker = try MosquittoBroker()
        let scratch = try TemporaryDirectory(prefix: "beacond-venue-big")
        let huge =
            #"{"type":"state","node":"big","seq":1,"ts":1,"mode":""#
            + String(repeating: "x", count: 50 * 1024 * 1024) + #""}"#
        let big = try scratch.write("big.json", huge)
        #expect(try broker.publish("georacing/big/state", file: big, extra: ["-r"]) == 0)
        let online = try scratch.write("online", "online")
        #expect(try broker.publish("georacing/big/status", file: online, extra: ["-r"]) == 0)

        let measured = try MeasuredRun.beacond(["venue", "--mqtt-url", broker.url, "--once"])
        #expect(measured.status == 0, "\(measured.stderr)")
        #expect(measured.peakKilobytes < 100_000, "venue --once peaked at \(measured.peakKilobytes) kB")
        print("venue --once with a 50 MB retained state: peak RSS \(measured.peakKilobytes) kB")
        // The broker held it, and dropped it for venue rather than send it.
        #expect(broker.logText.contains("Dropping too large outgoing PUBLISH"), "\(broker.logText)")

        let json = try BeacondProcess.run(["venue", "--mqtt-url", broker.url, "--json"])
        #expect(json.status == 0, "\(json.stderr)")
        #expect(json.stdout.utf8.count < 1 << 20, "--json printed \(json.stdout.utf8.count) bytes")
        print("venue --json with a 50 MB retained state: \(json.stdout.utf8.count) bytes")
        let row = try #require(try Self.nodes(json.stdout)["big"])
        // Listed, with no state (the broker kept it from us), and an alarm.
        #expect(row["mode"] is NSNull)
        #expect(row["alarm"] as? Bool == true)
        #expect(row["problem"] as? String == "no state")
    }

    @Test func aBrokerWhereEachNodeWritesOnlyItsOwnTopicsStopsAForger() throws {
        let scratch = try TemporaryDirectory(prefix: "beacond-venue-acl")
        // docs/mqtt.md, "Broker access control", as written there.
        let acl = """
            pattern write georacing/%u/#
            user venue
            topic read georacing/#

            """
        let broker = try MosquittoBroker(
            users: ["east": "east pass", "mallory": "mallory pass", "venue": "venue pass"], acl: acl)
        let password = try scratch.write("east-password", "east pass\n")
        let east = try MqttSecurityTests.daemon(
            scratch, node: "east",
            mqtt: "  url: \(broker.url)\n  username: east\n  password_file: \(password)\n")
        #expect(east.waitForLog("mqtt: connected to \(broker.url) as node east"))
        let credentials = ["-u", "venue", "-P", "venue pass"]
        #expect(
            blockingWaitUntil(within: 10, intervalMicros: 200_000) {
                (try? broker.retained("georacing/east/state", extra: credentials))?.isEmpty == false
            })

        // Mallory, a valid user of the broker, forges east's state and status, retained.
        let now = Date().timeIntervalSince1970
        let forged = try scratch.write(
            "forged.json",
            #"{"type":"state","node":"east","run":"forged","seq":999999,"ts":\#(now),"mode":"forged_mode","#
                + #""source":"remote","sent":\#(now + 1)}"#)
        let offline = try scratch.write("offline", "offline")
        let mallory = ["-u", "mallory", "-P", "mallory pass", "-r"]
        try broker.publish("georacing/east/state", file: forged, extra: mallory)
        try broker.publish("georacing/east/status", file: offline, extra: mallory)
        // Her own topics she may write.
        let own = try scratch.write(
            "own.json",
            #"{"type":"state","node":"mallory","run":"m","seq":1,"ts":\#(now),"mode":"normal","sent":\#(now)}"#)
        try broker.publish("georacing/mallory/state", file: own, extra: mallory)

        let result = try BeacondProcess.run(
            [
                "venue", "--mqtt-url", broker.url, "--username", "venue", "--password-file",
                try scratch.write("venue-password", "venue pass\n"), "--json",
            ])
        #expect(result.status == 0, "\(result.stderr)")
        let nodes = try Self.nodes(result.stdout)
        let row = try #require(nodes["east"])
        #expect(row["mode"] as? String != "forged_mode")
        #expect(row["mode"] is String)
        #expect(row["online"] as? Bool == true)
        #expect(row["alarm"] as? Bool == false, "\(row)")
        #expect(nodes["mallory"]?["mode"] as? String == "normal")
        // The broker never took the forgery.
        let retained = try broker.retained("georacing/east/state", extra: credentials)["georacing/east/state"]
        #expect(MqttVenueTests.json(retained)?["mode"] as? String != "forged_mode")
        #expect(east.stop() != nil)
    }
}
