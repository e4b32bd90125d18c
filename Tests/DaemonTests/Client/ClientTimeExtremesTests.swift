import Foundation
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// Issue 25, item 2: every client that does arithmetic on a time or count it did not make (`venue`,
/// `watch`, the terminal and web kiosks, `status`) survives the extremes a forged or broken peer can
/// send, decoded the way the client decodes them, at this clock and at the ends of Int64. Before the
/// fix the kiosks and `venue` trapped on some of them (a crash of the test process).
@Suite struct ClientTimeExtremesTests {
    /// JSON numbers where a time, an age or a count goes.
    static let extremes = [
        "1e300", "-1e300", "-9223372036854775808", "9223372036854775807", "18446744073709551615",
        "-9223372036854.775808", "9223372036854.775807", "-9223372036854.775", "0", "-0.000001", "1e-300",
    ]
    static let clocks: [Int64] = [KioskSamples.now, .max, .min, 0]

    /// `line` with every `"key":<number>` member of `keys` set to `literal`.
    static func replacing(_ line: [UInt8], keys: [String], with literal: String) throws -> [UInt8] {
        var text = String(decoding: line, as: UTF8.self)
        for key in keys {
            let pattern = try Regex("\"(\(key))\":-?[0-9][0-9.eE+-]*")
            text = text.replacing(pattern) { match in "\"\(match.output[1].substring ?? "")\":\(literal)" }
        }
        return Array(text.utf8)
    }

    static func staleState() -> StateMessage {
        KioskSamples.state(
            mode: "red_flag", source: "remote", zone: 2, remote: KioskSamples.remote(fresh: false, age: 62))
    }

    @Test(arguments: extremes)
    func theKiosksSurviveExtremeTimesAndAges(literal: String) throws {
        var decoded = 0
        for keys in [["ts"], ["age"], ["ts", "age"], ["seq", "zone"]] {
            let line = try Self.replacing(Self.staleState().line, keys: keys, with: literal)
            // Unreadable (ts beyond Int64 µs, an integer out of range): the feed reports it and reconnects.
            guard case .state(let state) = try? ServerMessage(line: line) else { continue }
            decoded += 1
            for now in Self.clocks {
                let view = KioskView(link: .connected(state), now: now)
                #expect(view.flag == .red)
                #expect(view.details.contains { $0.hasPrefix("Race control STALE") })
                let frame = KioskFrame.render(
                    view, columns: 80, rows: 24, capabilities: TerminalCapabilities(colors: .none), alternate: false)
                #expect(!frame.isEmpty)
                #expect(WebKioskViewDocument(view).json().contains("\"flag\":\"red\""))
            }
        }
        #expect(decoded > 0)
        // Unreachable since a time at either end of the clock.
        for since in Self.clocks {
            for now in Self.clocks {
                let view = KioskView(link: .unreachable(since: since, reason: "gone"), now: now)
                #expect(view.details.first?.hasPrefix("No contact with beacond for ") == true)
            }
        }
    }

    @Test(arguments: extremes)
    func watchAndStatusSurviveExtremeTimesAgesAndCounts(literal: String) throws {
        let keys = [
            "ts", "age", "uptime", "ttl_left", "last_seen", "seq", "sequence", "loaded_age", "window", "clients",
            "distance", "rssi", "omitted", "beacons_omitted", "overrides_omitted",
        ]
        var decoded = 0
        for key in keys + ["ts|age|uptime|ttl_left|last_seen|loaded_age|window"] {
            let line = try Self.replacing(WatchSamples.status(devices: []).line, keys: [key], with: literal)
            // Unreadable (an integer field out of range): the client says so, with where.
            guard case .status(let status) = try? ServerMessage(line: line) else { continue }
            decoded += 1
            for sort in WatchSort.allCases {
                let view = WatchView(source: "s", status: status, sort: sort, showsDevices: true)
                #expect(WatchScreen.snapshot(view).contains("EVACUATE"))
                #expect(!WatchScreen.frame(view, columns: 120, rows: 40, capabilities: .init(colors: .none)).isEmpty)
            }
            #expect(StatusReport.render(status).contains("state     evacuation"))
        }
        #expect(decoded > 0)
    }

    @Test(arguments: extremes)
    func venueSurvivesExtremeTimesAndCounts(literal: String) throws {
        let message = StateMessage(
            seq: 1, time: WallTime(micros: KioskSamples.now), mode: "evacuation", source: "remote", zone: 4,
            beacon: nil, remote: nil, scanner: ScannerStatus(backend: "replay", state: .up))
        let payload = MqttPayload.stamped(
            MqttPayload.state(
                message, node: "n", run: "r", raceControl: RaceControlPart(mode: "evacuation", lastUpdated: literal)),
            sentMicros: KioskSamples.now)
        for keys in [["ts"], ["sent"], ["seq"], ["zone"], ["ts", "sent", "seq"]] {
            var table = VenueTable(prefix: "g")
            table.receive(topic: "g/other/state", payload: payload)
            table.receive(topic: "g/n/state", payload: try Self.replacing(payload, keys: keys, with: literal))
            for now in Self.clocks {
                let rows = table.rows(now: now)
                let row = try #require(rows.first { $0.node == "n" })
                // Listed, with its mode, whatever the numbers.
                #expect(row.mode == "evacuation")
                #expect(VenueReport.table(rows, color: false).contains("evacuation"))
                #expect(
                    JSONSerialization.isValidJSONObject(
                        try JSONSerialization.jsonObject(with: Data(VenueReport.json(rows)))))
            }
        }
    }

    @Test func anExtremeTsIsFlaggedNotSilentlyShown() throws {
        let message = #"{"node":"n","seq":18446744073709551615,"ts":-9223372036854775808,"mode":"normal"}"#
        var table = VenueTable(prefix: "g")
        table.receive(topic: "g/n/state", payload: Array(message.utf8))
        let row = try #require(table.rows(now: KioskSamples.now).first)
        #expect(row.alarm)
        #expect(row.problem?.contains("seq is not an integer in range") == true)
        #expect(row.problem?.contains("ts -9.22337e+18 is out of range") == true)
    }
}
