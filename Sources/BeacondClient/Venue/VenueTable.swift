import CircuitState
import Foundation

/// `beacond venue`'s view of every node, built from the retained `<prefix>/<node>/state` and
/// `<prefix>/<node>/status` messages. Pure: messages and the current time in, rows out.
///
/// Whatever the broker holds may be forged or broken (docs/mqtt.md, "What `beacond venue` believes"):
/// a state whose `node` is not its topic's, or whose `seq`, `ts` or `sent` goes backwards within one
/// run, is refused and flagged (the node keeps its last good state); a state not sent again within
/// `staleAfter` (nodes republish every 30 s) is stale; an unknown status, an unreadable, oversize or
/// missing state, and a time beyond the venue's own clock are alarms. Race control is compared across
/// nodes: a node whose `race_control.last_updated` is more than `lagLimit` older than the newest any
/// node reports, among those not beyond this clock, is lagging.
///
/// The table holds `maxNodes`; past that a node is left out and counted, unless it shows an evacuation
/// (or an alarm) and a node of lower rank can make room for it.
package struct VenueTable: Sendable {
    package static let lagLimit: Int64 = 5_000_000
    /// Nodes kept; a venue has dozens.
    package static let maxNodes = 4096
    /// Names of left-out nodes remembered, to count each once; past this they are counted per message.
    package static let maxLeftOutNames = 16_384
    /// A state is a few KiB; a larger payload is refused unread.
    package static let maxStatePayload = 16_384
    /// `online` or `offline`; the first this many bytes of anything else are shown.
    package static let maxStatusPayload = 32
    /// Nodes republish their state every 30 s (`MqttPublisher.republishInterval`); one not sent again
    /// within 1.5 times that is stale.
    package static let staleAfter: Int64 = 45_000_000
    /// How far a node's or race control's clock may run ahead of this one before its time is flagged
    /// (and, for race control, not taken as the newest).
    package static let futureLimit: Int64 = 60_000_000

    package struct Node: Hashable, Sendable {
        package var name: String
        /// The last state accepted.
        package var state: MqttStateMessage?
        /// The latest state payload could not be read: why.
        package var stateProblem: String?
        /// Why the latest state payload was refused (the last accepted one is kept); nil once one is
        /// accepted again.
        package var refusal: String?
        package var refusedMessages = 0
        /// The status payload as sent (cut to `maxStatusPayload` bytes), or nil before one arrived.
        package var status: String?
        /// The message count when this node last changed: the oldest goes first to make room.
        var touched = 0

        init(name: String) { self.name = name }

        var showsEvacuation: Bool { state?.message.mode == "evacuation" || state?.raceControl?.mode == "evacuation" }

        /// 2 for an evacuation, 1 for an alarm that needs no clock, 0 otherwise: who may make room.
        var rank: Int {
            if showsEvacuation { return 2 }
            let statusAlarm = status.map { $0 != "online" } ?? false
            let stateAlarm = stateProblem != nil || refusal != nil || !(state?.problems.isEmpty ?? true)
            return statusAlarm || stateAlarm ? 1 : 0
        }
    }

    package struct Row: Hashable, Sendable {
        package var node: String
        package var mode: String?
        package var source: String?
        package var zone: Int?
        package var zoneName: String?
        /// Seconds since the state's `ts`; nil without a usable one.
        package var age: Double?
        /// Seconds since the state was last sent (`sent`); nil without one.
        package var sentAge: Double?
        package var online: Bool?
        package var raceControlMode: String?
        package var raceControlUpdated: String?
        /// How far the node's race-control part trails the newest, seconds; nil when not comparable.
        package var raceControlLag: Double?
        package var lagging: Bool
        package var offline: Bool
        /// The state was not sent again within `staleAfter`, or carries no `sent`.
        package var stale: Bool
        package var evacuation: Bool
        package var refusedMessages: Int
        package var problems: [String]

        package var problem: String? { problems.isEmpty ? nil : problems.joined(separator: "; ") }
        package var alarm: Bool { lagging || offline || stale || !problems.isEmpty }
    }

    package private(set) var nodes: [String: Node] = [:]
    /// Nodes not in the table (it was full), by name, up to `maxLeftOutNames`.
    package private(set) var leftOutNames: Set<String> = []
    /// Messages of left-out nodes past `maxLeftOutNames` names.
    package private(set) var leftOutUncounted = 0
    /// Messages on topics that cannot be a node's (an invalid node name).
    package private(set) var ignoredMessages = 0
    private var rankCounts = [0, 0, 0]
    private var messages = 0
    let prefix: String

    package init(prefix: String) {
        self.prefix = prefix
    }

    /// Nodes seen but not in the table.
    package var leftOut: Int { leftOutNames.count.addingReportingOverflow(leftOutUncounted).partialValue }

    /// One message as received; topics other than a node's state or status are ignored.
    package mutating func receive(topic: String, payload: [UInt8]) {
        receive(topic: topic, size: payload.count, payload: payload)
    }

    /// A message the client refused to copy (over its cap): only its size.
    package mutating func receive(topic: String, oversize size: Int) {
        receive(topic: topic, size: max(size, Self.maxStatePayload + 1), payload: [])
    }

    private mutating func receive(topic: String, size: Int, payload: [UInt8]) {
        guard let (name, kind) = MqttTopics.parse(topic, prefix: prefix) else { return }
        guard MqttTopicText.nodeProblem(name) == nil else {
            ignoredMessages += 1
            return
        }
        messages += 1
        var node = nodes[name] ?? Node(name: name)
        if kind == "status" {
            Self.apply(status: payload, size: size, to: &node)
        } else {
            Self.apply(state: payload, size: size, to: &node)
        }
        node.touched = messages
        if let old = nodes[name] {
            rankCounts[old.rank] -= 1
            insert(node)
        } else if nodes.count < Self.maxNodes {
            insert(node)
        } else {
            admit(node)
        }
    }

    private mutating func insert(_ node: Node) {
        nodes[node.name] = node
        rankCounts[node.rank] += 1
        leftOutNames.remove(node.name)
    }

    /// The table is full: `node` comes in in place of the longest-unchanged node of the lowest rank,
    /// if that rank is below its own; else it is left out.
    private mutating func admit(_ node: Node) {
        let rank = node.rank
        guard let lowest = rankCounts.firstIndex(where: { $0 > 0 }), lowest < rank,
            let victim = nodes.values.filter({ $0.rank == lowest }).min(by: { $0.touched < $1.touched })
        else {
            noteLeftOut(node.name)
            return
        }
        nodes.removeValue(forKey: victim.name)
        rankCounts[lowest] -= 1
        noteLeftOut(victim.name)
        insert(node)
    }

    private mutating func noteLeftOut(_ name: String) {
        if leftOutNames.contains(name) { return }
        if leftOutNames.count < Self.maxLeftOutNames {
            leftOutNames.insert(name)
        } else {
            leftOutUncounted = leftOutUncounted.addingReportingOverflow(1).partialValue
        }
    }

    private static func apply(status payload: [UInt8], size: Int, to node: inout Node) {
        // An empty retained message clears the topic.
        node.status = size == 0 ? nil : String(decoding: payload.prefix(maxStatusPayload), as: UTF8.self)
    }

    private static func apply(state payload: [UInt8], size: Int, to node: inout Node) {
        if size == 0 {
            node.state = nil
            node.stateProblem = nil
            node.refusal = nil
            return
        }
        guard size <= maxStatePayload else {
            refuse("a state of \(size) bytes, over the \(maxStatePayload)-byte cap", &node)
            return
        }
        let message: MqttStateMessage
        do {
            message = try JSONDecoder().decode(MqttStateMessage.self, from: Data(payload))
        } catch {
            node.state = nil
            node.stateProblem = "unreadable state (\(size) bytes)"
            node.refusal = nil
            return
        }
        if let refusal = refusal(of: message, by: node) {
            refuse(refusal, &node)
            return
        }
        node.state = message
        node.stateProblem = nil
        node.refusal = nil
    }

    private static func refuse(_ reason: String, _ node: inout Node) {
        node.refusal = reason
        node.refusedMessages = node.refusedMessages.addingReportingOverflow(1).partialValue
    }

    /// Why `message` is not `node`'s next state; nil when it may be.
    static func refusal(of message: MqttStateMessage, by node: Node) -> String? {
        guard message.node == node.name else {
            return message.node.map { "its node is \"\($0)\", not the topic's" } ?? "it names no node"
        }
        guard let previous = node.state, let run = message.run, previous.run == run else { return nil }
        if let seq = message.seq, let before = previous.seq, seq < before {
            return "seq went back from \(before) to \(seq) within run \(run)"
        }
        if let time = message.time, let before = previous.time, time.micros < before.micros {
            return "ts went back within run \(run)"
        }
        if let sent = message.sent, let before = previous.sent, sent.micros < before.micros {
            return "sent went back within run \(run)"
        }
        return nil
    }

    /// Every node, sorted by name, as of wall time `now` (Unix microseconds, this machine's clock).
    package func rows(now: Int64) -> [Row] {
        let limit = now.addingSaturating(Self.futureLimit)
        let updated = nodes.mapValues { $0.state?.raceControl?.lastUpdated.flatMap(Self.parseTime) }
        let newest = updated.values.compactMap { $0 }.filter { $0 <= limit }.max()
        return nodes.keys.sorted().compactMap { name in
            guard let node = nodes[name] else { return nil }
            return row(node, updated: updated[name] ?? nil, newest: newest, now: now, limit: limit)
        }
    }

    private func row(_ node: Node, updated: Int64?, newest: Int64?, now: Int64, limit: Int64) -> Row {
        let state = node.state
        var problems: [String] = []
        if let problem = node.stateProblem { problems.append(problem) }
        if let refusal = node.refusal { problems.append("refused a state: \(refusal)") }
        problems += state?.problems ?? []
        switch node.status {
        case nil, "online", "offline": break
        case let status?: problems.append("unknown status \"\(status)\"")
        }
        if state == nil, node.stateProblem == nil, node.status != "offline" { problems.append("no state") }
        if let scanner = state?.message.scanner, scanner.state == .down || scanner.state == .degraded {
            let lost = scanner.adapters.filter { $0.state != .up }.map { "\($0.name) \($0.state.rawValue)" }
            problems.append(
                "scanner \(scanner.state.rawValue)" + (lost.isEmpty ? "" : ": " + lost.joined(separator: ", ")))
        }
        if let time = state?.time, time.micros > limit { problems.append("ts is ahead of this clock") }
        if let sent = state?.sent, sent.micros > limit { problems.append("sent is ahead of this clock") }
        var lag: Int64?
        if let updated {
            if updated > limit {
                problems.append("race_control.last_updated is ahead of this clock")
            } else if let newest {
                lag = newest.subtractingSaturating(updated)
            }
        }
        let sentAge = state?.sent.map { Self.seconds(now.subtractingSaturating($0.micros)) }
        return Row(
            node: node.name, mode: state?.message.mode,
            source: state.flatMap { $0.message.source.isEmpty ? nil : $0.message.source },
            zone: state?.message.zone, zoneName: state?.message.zoneName,
            age: state?.time.map { Self.seconds(now.subtractingSaturating($0.micros)) }, sentAge: sentAge,
            online: node.status.map { $0 == "online" },
            raceControlMode: state?.raceControl?.mode, raceControlUpdated: state?.raceControl?.lastUpdated,
            raceControlLag: lag.map { Double($0) / 1_000_000 }, lagging: (lag ?? 0) > Self.lagLimit,
            offline: node.status == "offline",
            stale: state != nil && (state?.sent).map { now.subtractingSaturating($0.micros) > Self.staleAfter } ?? true,
            evacuation: node.showsEvacuation, refusedMessages: node.refusedMessages, problems: problems)
    }

    /// Non-negative seconds of a microsecond difference (a clock ahead counts as 0).
    private static func seconds(_ micros: Int64) -> Double { Double(max(0, micros)) / 1_000_000 }

    /// `last_updated` as Unix microseconds: ISO 8601 (with or without fractional seconds), or a number
    /// of Unix seconds. Nil for anything else (such a node is not compared).
    package static func parseTime(_ text: String) -> Int64? {
        let trimmed = text.trimmingSpaces()
        if let seconds = Double(trimmed), seconds.isFinite, abs(seconds) < 1e11 {
            return Int64((seconds * 1_000_000).rounded())
        }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: trimmed) { return micros(date) }
        formatter.formatOptions = [.withInternetDateTime]
        if let date = formatter.date(from: trimmed) { return micros(date) }
        return nil
    }

    /// Checked: a date the formatter accepts but Int64 microseconds cannot hold is not a time.
    private static func micros(_ date: Date) -> Int64? {
        Int64(exactly: (date.timeIntervalSince1970 * 1_000_000).rounded())
    }
}
