import Foundation
import Testing

/// Issue 11, end to end: names configured once in the daemon reach every client as `zone_name`,
/// and a SIGHUP rename is published at once without dropping the client.
@Suite(.serialized) struct ZoneNamesEndToEndTests {
    static var example: String { ReplayCommandTests.example }

    static func config(pitLane: String) -> String {
        """
        zones:
          names:
            1: "Main grandstand"
            2: "\(pitLane)"
            3: Paddock

        """
    }

    @Test func theReplayedStateCarriesTheZonesNameAndARenameIsPublished() throws {
        let config = BeacondProcess.temporaryFile("names.yaml")
        try Self.config(pitLane: "Pit lane").write(toFile: config, atomically: true, encoding: .utf8)
        // At 5x the zone 2 safety car (capture second 20) arrives 4 s in, and zone 2 stays shown
        // until second 150 of the capture (26 s in).
        let daemon = try DaemonProcess([
            "--config", config, "--backend", "replay", "--replay", Self.example, "--speed", "5",
        ])
        defer { _ = daemon.stop() }
        #expect(daemon.waitForLog("listening on"))
        let client = try LineClient(path: daemon.socket)
        var pitLane: [String: Any]?
        for _ in 0..<50 {
            guard let state = client.next(type: "state") else { break }
            if state["zone"] as? Int == 1 { #expect(state["zone_name"] as? String == "Main grandstand") }
            if state["zone"] as? Int == 2 {
                pitLane = state
                break
            }
        }
        let shown = try #require(pitLane, "zone 2 was never published")
        #expect(shown["mode"] as? String == "safety_car")
        #expect(shown["zone_name"] as? String == "Pit lane")
        #expect((shown["beacon"] as? [String: Any])?["zone_name"] as? String == "Pit lane")

        try Self.config(pitLane: "Pit straight").write(toFile: config, atomically: true, encoding: .utf8)
        kill(daemon.process.processIdentifier, SIGHUP)
        var renamed: [String: Any]?
        for _ in 0..<20 {
            guard let state = client.next(type: "state") else { break }
            if state["zone_name"] as? String == "Pit straight" {
                renamed = state
                break
            }
        }
        let after = try #require(renamed, "the rename was not published")
        #expect(after["zone"] as? Int == 2)
        #expect((after["seq"] as? Int ?? 0) > (shown["seq"] as? Int ?? .max))
        #expect(daemon.waitForLog(#"zones.names: zone 2 "Pit lane" -> "Pit straight""#))

        let status = try daemon.status()
        let state = try #require(status["state"] as? [String: Any])
        #expect(state["zone"] as? Int == 2)
        #expect(state["zone_name"] as? String == "Pit straight")
        let beacons = try #require(status["beacons"] as? [[String: Any]])
        let paddock = beacons.first { $0["zone"] as? Int == 3 && $0["kind"] as? String == "circuit" }
        #expect(paddock?["zone_name"] as? String == "Paddock")
        let text = try BeacondProcess.run(["status", "--socket", daemon.socket])
        #expect(text.status == 0)
        #expect(text.stdout.contains("zone 2 (Pit straight)"))

        // The client stayed connected through the reload.
        client.send(#"{"cmd":"ping"}"#)
        #expect(client.next(type: "pong") != nil)
    }

    @Test func aBadNameExits78NamingFileLineAndKey() throws {
        let config = BeacondProcess.temporaryFile("bad-names.yaml")
        try "zones:\n  names:\n    1: Main grandstand\n    3: \"Bell\\a\"\n"
            .write(toFile: config, atomically: true, encoding: .utf8)
        let result = try BeacondProcess.run([
            "run", "--config", config, "--backend", "replay", "--replay", Self.example,
        ])
        #expect(result.status == 78)
        #expect(result.stderr.contains("\(config):4:"))
        #expect(result.stderr.contains("zones.names.3: the name \"Bell\\u{7}\" contains a control character"))
        #expect(!result.stderr.contains("\u{7}"))
    }
}
