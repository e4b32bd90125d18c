import Foundation

/// `beacond venue`'s view of every node, built from the retained `<prefix>/<node>/state` and
/// `<prefix>/<node>/status` messages. Pure: messages and the current time in, rows out.
///
/// The venue-wide alarm compares only what every node shares, race control: a node whose race-control
/// part (`race_control.last_updated`) is more than `lagLimit` older than the newest any node reports is
/// lagging (a kiosk stuck on an old race-control state); an `offline` node is flagged too.
package struct VenueTable: Sendable {
    package static let lagLimit: Int64 = 5_000_000
    /// Nodes kept; a venue has dozens. Past this, new nodes are counted, not shown.
    package static let maxNodes = 4096

    package struct Node: Hashable, Sendable {
        package var name: String
        package var state: MqttStateMessage?
        /// The state payload could not be read: why.
        package var stateProblem: String?
        /// `online`, `offline`, or nil before a status arrived.
        package var status: String?
    }

    package struct Row: Hashable, Sendable {
        package var node: String
        package var mode: String?
        package var source: String?
        package var zone: Int?
        package var zoneName: String?
        /// Seconds since the state's `ts`; nil without a state.
        package var age: Double?
        package var online: Bool?
        package var raceControlMode: String?
        package var raceControlUpdated: String?
        /// How far the node's race-control part trails the newest, seconds; nil when not comparable.
        package var raceControlLag: Double?
        package var lagging: Bool
        package var offline: Bool
        package var problem: String?

        package var alarm: Bool { lagging || offline }
    }

    package private(set) var nodes: [String: Node] = [:]
    package private(set) var ignoredNodes = 0
    let prefix: String

    package init(prefix: String) {
        self.prefix = prefix
    }

    /// One message as received; topics other than a node's state or status are ignored.
    package mutating func receive(topic: String, payload: [UInt8]) {
        guard let (name, kind) = MqttTopics.parse(topic, prefix: prefix) else { return }
        guard nodes[name] != nil || nodes.count < Self.maxNodes else {
            ignoredNodes += 1
            return
        }
        var node = nodes[name] ?? Node(name: name)
        if kind == "status" {
            let text = String(decoding: payload.prefix(64), as: UTF8.self)
            // An empty retained message clears the topic.
            node.status = payload.isEmpty ? nil : text
        } else if payload.isEmpty {
            node.state = nil
            node.stateProblem = nil
        } else {
            do {
                node.state = try JSONDecoder().decode(MqttStateMessage.self, from: Data(payload))
                node.stateProblem = nil
            } catch {
                node.state = nil
                node.stateProblem = "unreadable state (\(payload.count) bytes)"
            }
        }
        nodes[name] = node
    }

    /// Every node, sorted by name, as of wall time `now` (Unix microseconds).
    package func rows(now: Int64) -> [Row] {
        let updated = nodes.mapValues { $0.state?.raceControl?.lastUpdated.flatMap(Self.parseTime) }
        let newest = updated.values.compactMap { $0 }.max()
        return nodes.keys.sorted().compactMap { name in
            guard let node = nodes[name] else { return nil }
            let state = node.state
            var lag: Int64?
            if let newest, let mine = updated[name] ?? nil { lag = newest - mine }
            let age = state.map { max(0, Double(now - $0.time.micros) / 1_000_000) }
            return Row(
                node: name, mode: state?.mode, source: state?.source, zone: state?.zone, zoneName: state?.zoneName,
                age: age, online: node.status.map { $0 == "online" },
                raceControlMode: state?.raceControl?.mode, raceControlUpdated: state?.raceControl?.lastUpdated,
                raceControlLag: lag.map { Double($0) / 1_000_000 }, lagging: (lag ?? 0) > Self.lagLimit,
                offline: node.status == "offline", problem: node.stateProblem)
        }
    }

    /// `last_updated` as Unix microseconds: ISO 8601 (with or without fractional seconds), or a number
    /// of Unix seconds. Nil for anything else (such a node is not compared).
    package static func parseTime(_ text: String) -> Int64? {
        let trimmed = text.trimmingSpaces()
        if let seconds = Double(trimmed), seconds.isFinite, abs(seconds) < 1e11 {
            return Int64((seconds * 1_000_000).rounded())
        }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: trimmed) { return Int64((date.timeIntervalSince1970 * 1_000_000).rounded()) }
        formatter.formatOptions = [.withInternetDateTime]
        if let date = formatter.date(from: trimmed) { return Int64((date.timeIntervalSince1970 * 1_000_000).rounded()) }
        return nil
    }
}
