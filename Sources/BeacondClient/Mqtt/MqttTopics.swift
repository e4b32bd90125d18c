import BLEPayload
import CircuitState

/// The topics one node publishes (docs/mqtt.md): `<prefix>/<node>/state`, `<prefix>/<node>/status` and
/// `<prefix>/<node>/beacons/<key>`. The prefix and node were checked (`MqttTopicText`), so no topic holds
/// a wildcard, a space or a NUL.
package struct MqttTopics: Hashable, Sendable {
    /// `mqtt.topic_prefix` when none is set.
    package static let defaultPrefix = "georacing"
    package let prefix: String
    package let node: String

    package init(prefix: String, node: String) {
        self.prefix = prefix
        self.node = node
    }

    package var state: String { "\(prefix)/\(node)/state" }
    package var status: String { "\(prefix)/\(node)/status" }

    package func beacon(_ key: OverrideKey) -> String { "\(prefix)/\(node)/beacons/\(Self.sightingKey(key))" }

    /// `zone-<n>-<ADDR>`, `source-<id>-<ADDR>` or `command-<ADDR>`: the address as 12 upper-case hex
    /// digits, no colons.
    package static func sightingKey(_ key: OverrideKey) -> String {
        switch key {
        case .circuit(let zone, let address): "zone-\(zone)-\(hex(address))"
        case .staff(let sourceID, let address): "source-\(sourceID)-\(hex(address))"
        case .command(let address): "command-\(hex(address))"
        }
    }

    static func hex(_ address: BluetoothAddress) -> String {
        String(address.description.unicodeScalars.filter { $0 != ":" })
    }

    /// `beacond venue`'s subscriptions: every node's state and status under `prefix`.
    package static func venueFilters(prefix: String) -> [String] { ["\(prefix)/+/state", "\(prefix)/+/status"] }

    /// The node and the kind (`state`, `status`) of a topic under `prefix`; nil for any other topic.
    package static func parse(_ topic: String, prefix: String) -> (node: String, kind: String)? {
        guard topic.hasPrefix(prefix + "/") else { return nil }
        let rest = topic.dropFirst(prefix.count + 1).split(separator: "/", omittingEmptySubsequences: false)
        guard rest.count == 2, !rest[0].isEmpty, rest[1] == "state" || rest[1] == "status" else { return nil }
        return (String(rest[0]), String(rest[1]))
    }
}

/// What the state message carries of race control for the venue-wide comparison: the mode its last
/// fetch reported and that document's `last_updated`, as race control wrote it.
package struct RaceControlPart: Hashable, Sendable, Decodable {
    package var mode: String?
    package var lastUpdated: String?

    enum CodingKeys: String, CodingKey {
        case mode
        case lastUpdated = "last_updated"
    }

    package init(mode: String?, lastUpdated: String?) {
        self.mode = mode
        self.lastUpdated = lastUpdated
    }

    package init(_ snapshot: RemoteSnapshot) {
        let raw = if let global = snapshot.globalMode, !global.isEmpty { global } else { snapshot.mode }
        self.init(mode: snapshot.trackMode?.rawValue ?? raw, lastUpdated: snapshot.lastUpdated)
    }

    package func render(into writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("mode"); writer.string(orNull: mode)
        writer.key("last_updated"); writer.string(orNull: lastUpdated)
        writer.endObject()
    }
}

/// The payloads: the socket protocol's own messages (docs/protocol.md) with the node's name added,
/// and (the state) the node's run, race control's part and, stamped as it is sent, the time it was sent.
package enum MqttPayload {
    /// `{"type":"state","node":…,<the state message's fields>,"run":…,"race_control":{…}|null}`: the
    /// hub's `StateMessage`, rendered with what MQTT adds; `MqttStateMessage` reads it back.
    package static func state(
        _ message: StateMessage, node: String, run: String? = nil, raceControl: RaceControlPart?,
        transmitter: BeaconStatus? = nil
    ) -> [UInt8] {
        var writer = JSONWriter(capacity: 512)
        writer.beginObject()
        writer.key("type"); writer.string("state")
        writer.key("node"); writer.string(node)
        message.renderFields(into: &writer)
        if let run { writer.key("run"); writer.string(run) }
        writer.key("race_control")
        if let raceControl { raceControl.render(into: &writer) } else { writer.null() }
        if let transmitter { writer.key("transmitter"); transmitter.render(into: &writer) }
        writer.endObject()
        return writer.bytes
    }

    /// `payload` (a JSON object) with `"sent":<Unix seconds>` added as its last member: the time this
    /// copy went to the broker, so `beacond venue` tells a retained state kept fresh by the node's
    /// periodic republish from one left behind (docs/mqtt.md).
    package static func stamped(_ payload: [UInt8], sentMicros: Int64) -> [UInt8] {
        guard payload.last == UInt8(ascii: "}"), payload.count > 2 else { return payload }
        var bytes = payload
        bytes.removeLast()
        bytes.append(contentsOf: #","sent":"#.utf8)
        bytes.appendSeconds(micros: sentMicros)
        bytes.append(UInt8(ascii: "}"))
        return bytes
    }

    /// A new run id: 16 random hex digits, drawn once per daemon process. `seq` restarts with the
    /// process; `beacond venue` holds `seq` and `ts` to never going backwards within one run.
    package static func newRunID() -> String {
        var generator = SystemRandomNumberGenerator()
        let value = generator.next() as UInt64
        let hex = String(value, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// `{"type":"beacon","node":…,"ts":…,"beacon":{…}}`.
    package static func sighting(_ message: BeaconMessage, node: String) -> [UInt8] {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("type"); writer.string("beacon")
        writer.key("node"); writer.string(node)
        writer.key("ts"); writer.time(message.time)
        writer.key("beacon"); message.beacon.render(into: &writer)
        writer.endObject()
        return writer.bytes
    }

    package static let online = Array("online".utf8)
    package static let offline = Array("offline".utf8)
}
