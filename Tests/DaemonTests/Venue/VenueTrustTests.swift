import Foundation
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// Issue 25, item 6: `beacond venue` does not believe whatever the broker holds. Each test fails on the
/// table before the fix (which took every message as the node's state).
@Suite struct VenueTrustTests {
    static let now = VenueTableTests.now
    static let online = Array("online".utf8)

    static func state(
        _ node: String, _ mode: String, seq: Int = 1, ts: Int64 = now, run: String? = "r1", sent: Int64? = now,
        updated: String? = nil
    ) -> [UInt8] {
        VenueTableTests.state(
            node: node, mode: mode, ts: ts, race: updated == nil ? nil : mode, updated: updated, seq: seq, run: run,
            sent: sent)
    }

    static func row(_ table: VenueTable, _ node: String, now: Int64 = now) -> VenueTable.Row? {
        table.rows(now: now).first { $0.node == node }
    }

    @Test func aStateNamingAnotherNodeIsNotThatNodesState() throws {
        var table = VenueTable(prefix: "georacing")
        table.receive(topic: "georacing/east/state", payload: Self.state("east", "evacuation"))
        // A forger writes a calm state on east's topic; its payload names another node, or none.
        table.receive(topic: "georacing/east/state", payload: Self.state("west", "normal", seq: 2))
        var east = try #require(Self.row(table, "east"))
        #expect(east.mode == "evacuation")
        #expect(east.alarm)
        #expect(east.refusedMessages == 1)
        #expect(east.problem?.contains(#"its node is "west", not the topic's"#) == true)
        table.receive(topic: "georacing/east/state", payload: Array(#"{"mode":"normal","seq":3,"ts":1}"#.utf8))
        east = try #require(Self.row(table, "east"))
        #expect(east.mode == "evacuation")
        #expect(east.problem?.contains("it names no node") == true)
        // A forgery that is the first thing seen: no state, and an alarm.
        var fresh = VenueTable(prefix: "georacing")
        fresh.receive(topic: "georacing/north/state", payload: Self.state("south", "normal"))
        let north = try #require(Self.row(fresh, "north"))
        #expect(north.mode == nil)
        #expect(north.alarm)
        // The node's own next state is taken, and the refusal clears.
        table.receive(topic: "georacing/east/state", payload: Self.state("east", "red_flag", seq: 4))
        east = try #require(Self.row(table, "east"))
        #expect(east.mode == "red_flag")
        #expect(!east.alarm)
    }

    @Test func seqTsAndSentNeverGoBackWithinARunAndARestartStartsAnew() throws {
        var table = VenueTable(prefix: "g")
        table.receive(topic: "g/n/state", payload: Self.state("n", "evacuation", seq: 5, ts: Self.now))
        // A replayed older state of the same run.
        table.receive(topic: "g/n/state", payload: Self.state("n", "normal", seq: 4, ts: Self.now + 1))
        var row = try #require(Self.row(table, "n"))
        #expect(row.mode == "evacuation")
        #expect(row.problem?.contains("seq went back from 5 to 4 within run r1") == true)
        table.receive(topic: "g/n/state", payload: Self.state("n", "normal", seq: 5, ts: Self.now - 1))
        #expect(Self.row(table, "n")?.problem?.contains("ts went back") == true)
        table.receive(topic: "g/n/state", payload: Self.state("n", "normal", seq: 5, sent: Self.now - 1))
        #expect(Self.row(table, "n")?.problem?.contains("sent went back") == true)
        #expect(Self.row(table, "n")?.refusedMessages == 3)
        // The same state sent again (the periodic republish, a race-control change) is taken.
        table.receive(topic: "g/n/state", payload: Self.state("n", "evacuation", seq: 5, sent: Self.now + 1))
        #expect(Self.row(table, "n", now: Self.now + 1)?.alarm == false)
        // A restart: a new run id, seq from 1 again.
        table.receive(topic: "g/n/state", payload: Self.state("n", "normal", seq: 1, run: "r2", sent: Self.now + 2))
        row = try #require(Self.row(table, "n", now: Self.now + 2))
        #expect(row.mode == "normal")
        #expect(!row.alarm)
    }

    @Test func aStateNotSentAgainWithin45SecondsIsStaleWhateverTheStatusSays() throws {
        var table = VenueTable(prefix: "g")
        table.receive(topic: "g/kept/state", payload: Self.state("kept", "normal", sent: Self.now - 40_000_000))
        table.receive(topic: "g/kept/status", payload: Self.online)
        // A node that stopped, its `offline` overwritten by a forged `online`.
        table.receive(topic: "g/stopped/state", payload: Self.state("stopped", "normal", sent: Self.now - 46_000_000))
        table.receive(topic: "g/stopped/status", payload: Self.online)
        // A daemon older than `sent`: its freshness cannot be judged.
        table.receive(topic: "g/old/state", payload: Self.state("old", "normal", sent: nil))
        #expect(Self.row(table, "kept")?.alarm == false)
        let stopped = try #require(Self.row(table, "stopped"))
        #expect(stopped.online == true)
        #expect(stopped.stale)
        #expect(stopped.alarm)
        #expect(stopped.sentAge == 46)
        #expect(Self.row(table, "old")?.stale == true)
        let text = VenueReport.table(table.rows(now: Self.now), color: false)
        #expect(text.contains("STALE (sent 46s ago)"))
        #expect(text.contains("STALE (no sent time)"))
    }

    @Test func anUnknownStatusAnUnreadableStateAndAMissingStateAreAlarms() {
        var table = VenueTable(prefix: "g")
        table.receive(topic: "g/a/state", payload: Self.state("a", "normal"))
        table.receive(topic: "g/a/status", payload: Array("maintenance".utf8))
        table.receive(topic: "g/b/state", payload: Array("{\"mode\":".utf8))
        table.receive(topic: "g/b/status", payload: Self.online)
        table.receive(topic: "g/c/status", payload: Self.online)
        let rows = Dictionary(uniqueKeysWithValues: table.rows(now: Self.now).map { ($0.node, $0) })
        #expect(rows["a"]?.problem == #"unknown status "maintenance""#)
        #expect(rows["b"]?.problem == "unreadable state (8 bytes)")
        #expect(rows["c"]?.problem == "no state")
        #expect(rows.values.allSatisfy { $0.alarm })
    }

    @Test func laggingIsJudgedAgainstThisClockNotTheNewestNode() throws {
        var table = VenueTable(prefix: "g")
        for node in ["a", "b", "c"] {
            table.receive(topic: "g/\(node)/state", payload: Self.state(node, "normal", updated: "1779508790"))
        }
        // One node claims race control wrote a year from now.
        table.receive(topic: "g/liar/state", payload: Self.state("liar", "normal", updated: "1811044800"))
        let rows = Dictionary(uniqueKeysWithValues: table.rows(now: Self.now).map { ($0.node, $0) })
        for node in ["a", "b", "c"] {
            #expect(rows[node]?.lagging == false)
            #expect(rows[node]?.alarm == false)
        }
        let liar = try #require(rows["liar"])
        #expect(liar.alarm)
        #expect(liar.problem == "race_control.last_updated is ahead of this clock")
        // A node genuinely behind the others is still lagging.
        table.receive(topic: "g/slow/state", payload: Self.state("slow", "normal", updated: "1779508780"))
        #expect(Self.row(table, "slow")?.lagging == true)
    }

    @Test func aFullTableTakesAnEvacuationAndCountsTheNodesItLeftOut() throws {
        var table = VenueTable(prefix: "g")
        for index in 0..<VenueTable.maxNodes {
            table.receive(topic: "g/forged-\(index)/state", payload: Self.state("forged-\(index)", "normal"))
        }
        table.receive(topic: "g/late-calm/state", payload: Self.state("late-calm", "normal"))
        table.receive(topic: "g/real/status", payload: Self.online)
        #expect(table.leftOut == 2)
        table.receive(topic: "g/real/state", payload: Self.state("real", "evacuation"))
        #expect(table.nodes.count == VenueTable.maxNodes)
        #expect(table.nodes["real"]?.state?.message.mode == "evacuation")
        // It took the place of the node unchanged longest.
        #expect(table.nodes["forged-0"] == nil)
        #expect(table.leftOut == 2)
        let rows = table.rows(now: Self.now)
        let text = VenueReport.table(rows, color: false, leftOut: table.leftOut)
        let lines = text.split(separator: "\n")
        #expect(lines[1].hasPrefix("  real "))
        #expect(text.hasSuffix("4096 nodes, 0 alarms, 2 more left out (the table holds 4096)\n"))
        let json = try #require(
            JSONSerialization.jsonObject(with: Data(VenueReport.json(rows, leftOut: table.leftOut))) as? [String: Any])
        #expect(json["left_out"] as? Int == 2)
        // Evacuations do not push out evacuations: a table full of them keeps them, and counts.
        var full = VenueTable(prefix: "g")
        for index in 0..<VenueTable.maxNodes {
            full.receive(topic: "g/e\(index)/state", payload: Self.state("e\(index)", "evacuation"))
        }
        full.receive(topic: "g/e-late/state", payload: Self.state("e-late", "evacuation"))
        #expect(full.leftOut == 1)
    }

    @Test func anAbsurdTsIsListedWithItsModeAndFlagged() throws {
        var table = VenueTable(prefix: "g")
        let payload = #"{"node":"n","seq":1,"ts":1e300,"mode":"evacuation","source":"beacon","zone":2}"#
        table.receive(topic: "g/n/state", payload: Array(payload.utf8))
        table.receive(topic: "g/ahead/state", payload: Self.state("ahead", "normal", ts: Self.now + 3_600_000_000))
        let row = try #require(Self.row(table, "n"))
        #expect(row.mode == "evacuation")
        #expect(row.age == nil)
        #expect(row.alarm)
        #expect(row.problem?.contains("ts 1e+300 is out of range") == true)
        #expect(Self.row(table, "ahead")?.problem == "ts is ahead of this clock")
        #expect(Self.row(table, "ahead")?.age == 0)
    }

    @Test func payloadsAndFieldsAreCapped() throws {
        var table = VenueTable(prefix: "g")
        table.receive(topic: "g/n/state", payload: Self.state("n", "evacuation"))
        let huge = #"{"node":"n","seq":9,"ts":1,"mode":""# + String(repeating: "x", count: 20_000) + #""}"#
        table.receive(topic: "g/n/state", payload: Array(huge.utf8))
        var row = try #require(Self.row(table, "n"))
        #expect(row.mode == "evacuation")
        #expect(row.problem?.contains("a state of 20037 bytes, over the 16384-byte cap") == true)
        table.receive(topic: "g/n/state", oversize: 52_428_800)
        #expect(Self.row(table, "n")?.problem?.contains("a state of 52428800 bytes") == true)
        // Under the payload cap, each text is cut to 64 characters.
        let long = String(repeating: "y", count: 5_000)
        let fields = #"{"node":"m","seq":1,"ts":1,"mode":"\#(long)","source":"\#(long)","zone_name":"\#(long)"}"#
        table.receive(topic: "g/m/state", payload: Array(fields.utf8))
        row = try #require(Self.row(table, "m"))
        #expect(row.mode?.count == 64)
        #expect(row.zoneName?.count == 64)
        #expect(row.problem?.contains("mode longer than 64 characters (cut)") == true)
        #expect(VenueReport.json([row]).count < 2_048)
        // A status is kept to 32 bytes.
        table.receive(topic: "g/m/status", payload: Array(repeating: UInt8(ascii: "z"), count: 100_000))
        #expect(table.nodes["m"]?.status?.utf8.count == VenueTable.maxStatusPayload)
        // Topics whose node level is no node name are counted, not tabled.
        table.receive(topic: "g/\(String(repeating: "q", count: 65))/state", payload: Self.state("q", "normal"))
        table.receive(topic: "g/a b/status", payload: Self.online)
        #expect(table.ignoredMessages == 2)
        #expect(table.nodes.count == 2)
    }
}
