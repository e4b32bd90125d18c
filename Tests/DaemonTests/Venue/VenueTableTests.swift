import Foundation
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// Issue 16: `beacond venue`'s table, from retained state and status messages.
@Suite struct VenueTableTests {
    static let now: Int64 = 1_779_508_800_000_000

    /// A node's state payload as `MqttPublisher` sends it: with its run, and stamped `sent` (nil: none,
    /// as from a daemon older than the field).
    static func state(
        node: String, mode: String, ts: Int64, race: String? = nil, updated: String? = nil, seq: Int = 1,
        run: String? = "r1", sent: Int64? = now, scanner: ScannerStatus = ScannerStatus(backend: "replay", state: .up)
    ) -> [UInt8] {
        let message = StateMessage(
            seq: seq, time: WallTime(micros: ts), mode: mode, source: "remote", zone: 4, zoneName: "Pit",
            beacon: nil, remote: nil, scanner: scanner)
        let part = race == nil && updated == nil ? nil : RaceControlPart(mode: race, lastUpdated: updated)
        let payload = MqttPayload.state(message, node: node, run: run, raceControl: part)
        return sent.map { MqttPayload.stamped(payload, sentMicros: $0) } ?? payload
    }

    /// Issue 32: a node whose scanner is down, or degraded (one of its adapters lost), is an alarm
    /// naming the adapters not scanning; one that scans on every adapter is not.
    @Test func aNodeWithAScannerDownOrDegradedIsAnAlarm() {
        var table = VenueTable(prefix: "georacing")
        let degraded = ScannerStatus(
            backend: "hci", state: .degraded,
            adapters: [AdapterHealth(name: "hci0", state: .up), AdapterHealth(name: "hci1", state: .recovering)])
        let up = ScannerStatus(
            backend: "hci", state: .up,
            adapters: [AdapterHealth(name: "hci0", state: .up), AdapterHealth(name: "hci1", state: .up)])
        for (node, scanner) in [("a", degraded), ("b", up), ("c", ScannerStatus(backend: "hci", state: .down))] {
            table.receive(
                topic: "georacing/\(node)/state",
                payload: Self.state(node: node, mode: "normal", ts: Self.now, scanner: scanner))
            table.receive(topic: "georacing/\(node)/status", payload: Array("online".utf8))
        }
        let rows = table.rows(now: Self.now)
        #expect(rows.map(\.problems) == [["scanner degraded: hci1 recovering"], [], ["scanner down"]])
        #expect(rows.map(\.alarm) == [true, false, true])
    }

    @Test func rowsShowEveryNodeSortedWithAgeAndOnline() {
        var table = VenueTable(prefix: "georacing")
        table.receive(
            topic: "georacing/b/state",
            payload: Self.state(node: "b", mode: "normal", ts: Self.now - 2_500_000, race: "normal", updated: nil))
        table.receive(topic: "georacing/b/status", payload: Array("online".utf8))
        table.receive(topic: "georacing/a/status", payload: Array("offline".utf8))
        table.receive(topic: "georacing/a/beacons/zone-1-AA", payload: [1])
        table.receive(topic: "elsewhere/c/state", payload: [1])
        let rows = table.rows(now: Self.now)
        #expect(rows.map(\.node) == ["a", "b"])
        #expect(rows[0].mode == nil)
        #expect(rows[0].offline)
        #expect(rows[0].alarm)
        #expect(rows[1].mode == "normal")
        #expect(rows[1].zone == 4)
        #expect(rows[1].age == 2.5)
        #expect(rows[1].online == true)
        #expect(!rows[1].alarm)
    }

    @Test func aNodeBehindRaceControlByMoreThanFiveSecondsIsFlagged() {
        var table = VenueTable(prefix: "georacing")
        let cases = [
            ("fresh", "2026-11-23T04:00:10Z"), ("close", "2026-11-23T04:00:05.000Z"), ("stuck", "2026-11-23T04:00:04Z"),
            ("unix", "1795406404.5"), ("odd", "yesterday"),
        ]
        for (node, updated) in cases {
            table.receive(
                topic: "georacing/\(node)/state",
                payload: Self.state(node: node, mode: "normal", ts: Self.now, race: "normal", updated: updated))
        }
        // This clock reads 04:00:20, after every last_updated: each is a candidate for the newest.
        let clock: Int64 = 1_795_406_420_000_000
        let rows = Dictionary(uniqueKeysWithValues: table.rows(now: clock).map { ($0.node, $0) })
        #expect(rows["fresh"]?.lagging == false)
        #expect(rows["fresh"]?.raceControlLag == 0)
        #expect(rows["close"]?.lagging == false)
        #expect(rows["close"]?.raceControlLag == 5)
        #expect(rows["stuck"]?.lagging == true)
        #expect(rows["stuck"]?.raceControlLag == 6)
        #expect(rows["unix"]?.lagging == true)
        #expect(rows["odd"]?.lagging == false)
        #expect(rows["odd"]?.raceControlLag == nil)
    }

    @Test func unreadableAndClearedMessages() {
        var table = VenueTable(prefix: "georacing")
        table.receive(topic: "georacing/x/state", payload: Array("{not json".utf8))
        #expect(table.rows(now: Self.now).first?.problem == "unreadable state (9 bytes)")
        table.receive(topic: "georacing/x/state", payload: [])
        table.receive(topic: "georacing/x/status", payload: [])
        let row = table.rows(now: Self.now).first
        // Cleared: nothing to show, and that is an alarm (a forger may clear a node's retained state).
        #expect(row?.problem == "no state")
        #expect(row?.alarm == true)
        #expect(row?.online == nil)
    }

    @Test func theTableAndTheSnapshot() throws {
        var table = VenueTable(prefix: "georacing")
        table.receive(
            topic: "georacing/kiosk-1/state",
            payload: Self.state(node: "kiosk-1", mode: "red_flag", ts: Self.now, race: "red_flag", updated: "1"))
        table.receive(topic: "georacing/kiosk-2/status", payload: Array("offline".utf8))
        let rows = table.rows(now: Self.now)
        let text = VenueReport.table(rows, color: false)
        #expect(text.contains(" kiosk-1"))
        #expect(text.contains("red_flag"))
        #expect(text.contains("! kiosk-2"))
        #expect(text.hasSuffix("2 nodes, 1 alarm\n"))
        let json = try #require(JSONSerialization.jsonObject(with: Data(VenueReport.json(rows))) as? [String: Any])
        #expect(json["alarms"] as? Int == 1)
        let nodes = try #require(json["nodes"] as? [[String: Any]])
        #expect(nodes.map { $0["node"] as? String } == ["kiosk-1", "kiosk-2"])
        #expect(nodes[1]["offline"] as? Bool == true)
        #expect((nodes[0]["race_control"] as? [String: Any])?["last_updated"] as? String == "1")
    }

    @Test func theTableIsBounded() {
        var table = VenueTable(prefix: "p")
        for index in 0..<(VenueTable.maxNodes + 3) {
            table.receive(topic: "p/n\(index)/status", payload: Array("online".utf8))
        }
        #expect(table.nodes.count == VenueTable.maxNodes)
        #expect(table.leftOut == 3)
    }
}
