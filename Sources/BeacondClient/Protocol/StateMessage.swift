import CircuitState

/// `{"type":"state",…}`: the published track state (docs/protocol.md, "state"). A status
/// reply's `state` holds the same fields without `type`.
package struct StateMessage: Hashable, Sendable, Decodable, RenderedMessage {
    /// The publication number.
    package var seq: Int
    package var time: WallTime
    package var mode: String
    /// `beacon`, `remote` or `none`.
    package var source: String
    package var zone: Int?
    /// The configured name of `zone` (`zones.names`); nil when it has none, there is no zone, or the
    /// daemon is older than the field.
    package var zoneName: String?
    package var beacon: BeaconReport?
    package var remote: RemoteReport?
    package var scanner: ScannerStatus

    enum CodingKeys: String, CodingKey {
        case seq
        case time = "ts"
        case mode, source, zone
        case zoneName = "zone_name"
        case beacon, remote, scanner
    }

    package init(
        seq: Int, time: WallTime, mode: String, source: String, zone: Int?, zoneName: String? = nil,
        beacon: BeaconReport?, remote: RemoteReport?, scanner: ScannerStatus
    ) {
        self.seq = seq
        self.time = time
        self.mode = mode
        self.source = source
        self.zone = zone
        self.zoneName = zoneName
        self.beacon = beacon
        self.remote = remote
        self.scanner = scanner
    }

    package func render(into writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("type"); writer.string("state")
        renderFields(into: &writer)
        writer.endObject()
    }

    /// The fields after `type`: a status reply's `state` object holds these.
    package func renderFields(into writer: inout JSONWriter) {
        writer.key("seq"); writer.int(seq)
        writer.key("ts"); writer.time(time)
        writer.key("mode"); writer.string(mode)
        writer.key("source"); writer.string(source)
        writer.key("zone"); writer.int(zone)
        writer.key("zone_name"); writer.string(orNull: zoneName)
        writer.key("beacon")
        if let beacon { beacon.render(into: &writer) } else { writer.null() }
        writer.key("remote"); remote.render(into: &writer)
        writer.key("scanner"); scanner.render(into: &writer)
    }
}

/// `{"type":"beacon","ts":…,"beacon":{…}}`: a beacon heard, for subscribed clients.
package struct BeaconMessage: Hashable, Sendable, Decodable, RenderedMessage {
    package var time: WallTime
    package var beacon: BeaconReport

    enum CodingKeys: String, CodingKey {
        case time = "ts"
        case beacon
    }

    package init(time: WallTime, beacon: BeaconReport) {
        self.time = time
        self.beacon = beacon
    }

    package func render(into writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("type"); writer.string("beacon")
        writer.key("ts"); writer.time(time)
        writer.key("beacon"); beacon.render(into: &writer)
        writer.endObject()
    }
}
