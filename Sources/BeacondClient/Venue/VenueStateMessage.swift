import Foundation

/// A state message as `beacond venue` reads it from `<prefix>/<node>/state`: the socket protocol's
/// `StateMessage` (what the node published), plus what MQTT adds (the node, its run, when this copy
/// was sent, race control's part). Anything on the broker may be forged or broken, so the reading is
/// lenient where it can be and bounded everywhere: a number out of range (a `ts` of 1e300, a `seq` of
/// 2^64 − 1) or an over-long text is noted in `problems` and the rest is still read, so such a node
/// is listed, flagged, with its mode. Only a payload without a readable `mode` is unreadable.
package struct MqttStateMessage: Hashable, Sendable, Decodable {
    /// Texts are kept to this many characters; a longer one is cut and noted.
    package static let maxFieldCharacters = 64
    /// The latest Unix time taken as a time (year 5138); later, or negative, is out of range.
    static let maxSeconds = 1e11

    /// The state as published. A `seq` or `ts` absent or out of range reads as 0 here, and as nil
    /// in `seq` and `time`; a `source` or `scanner` absent reads as empty ("", backend "" and none).
    package var message: StateMessage
    package var node: String?
    /// The publishing process's run id (`MqttPayload.newRunID`); nil from a daemon older than it.
    package var run: String?
    /// When this copy went to the broker (the node's periodic republish refreshes it); nil when absent
    /// (a daemon older than it) or out of range.
    package var sent: WallTime?
    package var raceControl: RaceControlPart?
    /// What was out of range, cut or unreadable, in words.
    package var problems: [String] = []
    private var seqWasRead = true
    private var timeWasRead = true

    /// `message.seq`; nil when it was absent or out of range (`problems` says).
    package var seq: Int? { seqWasRead ? message.seq : nil }
    /// `message.time`; nil when it was absent or out of range.
    package var time: WallTime? { timeWasRead ? message.time : nil }

    enum CodingKeys: String, CodingKey {
        case node, run, seq
        case time = "ts"
        case sent, mode, source, zone
        case zoneName = "zone_name"
        case beacon, remote, scanner
        case raceControl = "race_control"
    }

    package init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        var problems: [String] = []
        func text(_ key: CodingKeys) throws -> String? {
            guard let value = try container.decodeIfPresent(String.self, forKey: key) else { return nil }
            return Self.cut(value, key.rawValue, &problems)
        }
        let mode = try Self.cut(container.decode(String.self, forKey: .mode), "mode", &problems)
        node = try text(.node)
        run = try text(.run)
        let seq = Self.integer(container, .seq, &problems)
        let time = Self.time(container, .time, &problems)
        if time == nil, !container.contains(.time) { problems.append("no ts") }
        message = try StateMessage(
            seq: seq ?? 0, time: time ?? WallTime(micros: 0), mode: mode, source: text(.source) ?? "",
            zone: Self.integer(container, .zone, &problems), zoneName: text(.zoneName),
            beacon: Self.member(BeaconReport.self, container, .beacon, &problems),
            remote: Self.member(RemoteReport.self, container, .remote, &problems),
            scanner: Self.member(ScannerStatus.self, container, .scanner, &problems)
                ?? ScannerStatus(backend: "", state: .none))
        seqWasRead = seq != nil
        timeWasRead = time != nil
        sent = Self.time(container, .sent, &problems)
        if container.contains(.raceControl), (try? container.decodeNil(forKey: .raceControl)) != true {
            if let part = try? container.decodeIfPresent(RaceControlPart.self, forKey: .raceControl) {
                raceControl = RaceControlPart(
                    mode: part.mode.map { Self.cut($0, "race_control.mode", &problems) },
                    lastUpdated: part.lastUpdated.map { Self.cut($0, "race_control.last_updated", &problems) })
            } else {
                problems.append("race_control is unreadable")
            }
        }
        self.problems = problems
    }

    /// An object member of the state message; nil when absent or null, nil and a problem when unreadable.
    private static func member<Member: Decodable>(
        _ type: Member.Type, _ container: KeyedDecodingContainer<CodingKeys>, _ key: CodingKeys,
        _ problems: inout [String]
    ) -> Member? {
        if (try? container.decodeNil(forKey: key)) ?? true { return nil }
        if let value = try? container.decode(Member.self, forKey: key) { return value }
        problems.append("\(key.rawValue) is unreadable")
        return nil
    }

    private static func cut(_ text: String, _ name: String, _ problems: inout [String]) -> String {
        guard text.count > maxFieldCharacters else { return text }
        problems.append("\(name) longer than \(maxFieldCharacters) characters (cut)")
        return String(text.prefix(maxFieldCharacters - 1)) + "…"
    }

    /// An integer member; nil (and a problem) when it is not an integer that fits.
    private static func integer(
        _ container: KeyedDecodingContainer<CodingKeys>, _ key: CodingKeys, _ problems: inout [String]
    ) -> Int? {
        if let value = try? container.decodeIfPresent(Int.self, forKey: key) { return value }
        if (try? container.decodeNil(forKey: key)) ?? true { return nil }
        problems.append("\(key.rawValue) is not an integer in range")
        return nil
    }

    /// Unix seconds as microseconds; nil (and a problem) when not a number from 0 to `maxSeconds`.
    private static func time(
        _ container: KeyedDecodingContainer<CodingKeys>, _ key: CodingKeys, _ problems: inout [String]
    ) -> WallTime? {
        guard let seconds = try? container.decodeIfPresent(Double.self, forKey: key) else {
            if !((try? container.decodeNil(forKey: key)) ?? true) { problems.append("\(key.rawValue) is not a number") }
            return nil
        }
        guard seconds.isFinite, seconds >= 0, seconds < maxSeconds else {
            problems.append("\(key.rawValue) \(String(format: "%g", seconds)) is out of range")
            return nil
        }
        return WallTime(micros: Int64((seconds * 1_000_000).rounded()))
    }
}
