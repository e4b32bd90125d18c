import BeacondTestSupport
import Foundation
import Testing

@Suite(.serialized) struct TimelineReplayTests {
    static var example: String { ReplayCommandTests.example }
    /// 2026-05-16T12:00:00Z in Unix seconds.
    static let start = 1_778_932_800.0

    struct Change: Equatable, CustomStringConvertible {
        var offset: Double
        var mode: String
        var source: String
        var zone: Int?
        var description: String { "+\(offset) \(mode) \(source) \(zone.map(String.init) ?? "-")" }
    }

    static func changes(_ arguments: [String]) throws -> (changes: [Change], result: BeacondProcess.Result) {
        let result = try BeacondProcess.run(["replay", "--timeline", "--json"] + arguments)
        let changes = try result.jsonLines().map { line in
            Change(
                offset: ((try #require(line["ts"] as? Double)) - start).rounded(toPlaces: 6),
                mode: try #require(line["mode"] as? String), source: try #require(line["source"] as? String),
                zone: line["zone"] as? Int)
        }
        return (changes, result)
    }

    @Test func exampleCapturePublishesTheRaceWeekend() throws {
        let (changes, result) = try Self.changes([Self.example])
        #expect(result.status == 0)
        #expect(
            changes == [
                Change(offset: 0.001234, mode: "normal", source: "beacon", zone: 1),
                Change(offset: 20.251234, mode: "safety_car", source: "beacon", zone: 2),
                // The safety car's return to normal (a newer sequence) takes effect after the 1 s hold.
                Change(offset: 81.251234, mode: "normal", source: "beacon", zone: 2),
                Change(offset: 90.501234, mode: "red_flag", source: "beacon", zone: 3),
                // The staff device's 30 s red flag outlives the zone 3 beacon's return to normal.
                Change(offset: 169.751234, mode: "normal", source: "beacon", zone: 1),
                Change(offset: 170.001234, mode: "evacuation", source: "beacon", zone: 1),
                // Expiry, 10 s after the last evacuation frame, not at the next packet.
                Change(offset: 209.001234, mode: "normal", source: "beacon", zone: 2),
                // After the last record: the remaining beacons expire in turn.
                Change(offset: 249.251234, mode: "normal", source: "beacon", zone: 3),
                Change(offset: 249.501234, mode: "unknown", source: "none", zone: nil),
            ])
        #expect(result.stderr.contains("9 state changes"))
    }

    @Test func remoteTimelineIsFusedWithTheSafetyPolicy() throws {
        let remote = BeacondProcess.temporaryFile("remote.jsonl")
        try """
        {"ts": 1778932805.0, "state": {"id": 1, "global_mode": "YELLOW", "mode": "NORMAL", "message": "Debris at T3"}}
        {"ts": 1778932810.0, "error": "timeout"}
        {"ts": 1778932860.0, "state": [{"global_mode": "", "mode": "evacuation", "message": "Evacuate now"}]}
        {"ts": 1778932870.0, "state": {}}
        {"ts": 1778933020.0, "state": {"mode": "GREEN"}}

        """.write(toFile: remote, atomically: true, encoding: .utf8)
        let (changes, result) = try Self.changes(["--remote-timeline", remote, Self.example])
        #expect(result.status == 0)
        #expect(
            changes == [
                Change(offset: 0.001234, mode: "normal", source: "beacon", zone: 1),
                // A fresh remote state cannot be lowered by a beacon.
                Change(offset: 5, mode: "yellow_flag", source: "remote", zone: nil),
                // The failed fetch at +10 refreshes nothing: stale at +5 + 15.
                Change(offset: 20, mode: "normal", source: "beacon", zone: 1),
                Change(offset: 20.251234, mode: "safety_car", source: "beacon", zone: 2),
                // Evacuation latches: `{}` at +70 and staleness do not lift it, and it masks the red flag.
                Change(offset: 60, mode: "evacuation", source: "remote", zone: nil),
                Change(offset: 170.001234, mode: "evacuation", source: "beacon", zone: 1),
                Change(offset: 209.001234, mode: "evacuation", source: "remote", zone: nil),
                // A known non-evacuation mode lifts the latch.
                Change(offset: 220, mode: "normal", source: "remote", zone: nil),
                Change(offset: 235, mode: "normal", source: "beacon", zone: 2),
                Change(offset: 249.251234, mode: "normal", source: "beacon", zone: 3),
                Change(offset: 249.501234, mode: "unknown", source: "none", zone: nil),
            ])
    }

    @Test func negativeMinRSSIWithASpaceFiltersTheWeakZone() throws {
        let (changes, result) = try Self.changes(["--min-rssi", "-75", Self.example])
        #expect(result.status == 0)
        #expect(!changes.contains { $0.zone == 3 && $0.source == "beacon" && $0.offset < 92 })
        // The staff device (-68 dBm) still reports the red flag in zone 3.
        #expect(changes.contains(Change(offset: 92.751234, mode: "red_flag", source: "beacon", zone: 3)))
        let (equals, _) = try Self.changes(["--min-rssi=-75", Self.example])
        #expect(equals == changes)
    }

    @Test func zoneFilterAndMostSeverePolicy() throws {
        let (changes, result) = try Self.changes(["--zones", "1,2", "--policy", "most-severe", Self.example])
        #expect(result.status == 0)
        #expect(!changes.contains { $0.mode == "red_flag" })
        #expect(changes.contains(Change(offset: 170.001234, mode: "evacuation", source: "beacon", zone: 1)))
    }

    @Test func readableLogIsUTC() throws {
        let result = try BeacondProcess.run(["replay", "--timeline", Self.example])
        #expect(result.lines.first == "2026-05-16T12:00:00.001Z  NORMAL  beacon zone 1")
        #expect(result.lines.contains("2026-05-16T12:01:30.501Z  RED FLAG  beacon zone 3"))
        #expect(result.lines.last == "2026-05-16T12:04:09.501Z  UNKNOWN  none")
    }

    @Test func remoteMessagesCannotDriveTheTerminal() throws {
        let remote = BeacondProcess.temporaryFile("escape.jsonl")
        try #"{"ts": 1778932805.0, "state": {"mode": "RED", "message": "Stop\u001b[2J\u0007"}}"#
            .write(toFile: remote, atomically: true, encoding: .utf8)
        let result = try BeacondProcess.run(["replay", "--timeline", "--remote-timeline", remote, Self.example])
        let line = try #require(result.lines.first { $0.contains("RED FLAG  remote") })
        #expect(line.hasSuffix(#""Stop\u{1b}[2J\u{7}""#))
        #expect(!result.stdout.contains("\u{1b}"))
    }

    @Test func badRemoteTimelineNamesFileAndLine() throws {
        let remote = BeacondProcess.temporaryFile("bad.jsonl")
        try "{\"ts\": 1, \"state\": {}}\n{\"ts\": \"soon\", \"error\": \"x\"}\n"
            .write(toFile: remote, atomically: true, encoding: .utf8)
        let result = try BeacondProcess.run(["replay", "--timeline", "--remote-timeline", remote, Self.example])
        #expect(result.status == 1)
        #expect(result.stderr.contains("\(remote):2: \"ts\" must be a number of Unix seconds"))
        let missing = BeacondProcess.temporaryFile("neither.jsonl")
        try "{\"ts\": 1}\n".write(toFile: missing, atomically: true, encoding: .utf8)
        let second = try BeacondProcess.run(["replay", "--timeline", "--remote-timeline", missing, Self.example])
        #expect(second.status == 1)
        #expect(second.stderr.contains("\(missing):1: each line needs \"state\""))
    }

    @Test func timelineTakesOneCapture() throws {
        let result = try BeacondProcess.run(["replay", "--timeline", Self.example, Self.example])
        #expect(result.status == 64)
        #expect(result.stderr.contains("exactly one capture"))
    }
}

extension Double {
    func rounded(toPlaces places: Int) -> Double {
        var scale = 1.0
        for _ in 0..<places { scale *= 10 }
        return (self * scale).rounded() / scale
    }
}
