/// `status.beacon`: the daemon's own transmitter (`beacon:` section), and what `beacond beacon`
/// prints. Absent when there is none.
package struct BeaconStatus: Hashable, Sendable, Decodable {
    package var backend: String
    package var adapter: String
    package var zone: Int
    /// `advertising`, `starting` (a frame is waiting for the adapter), `silent` (nothing to
    /// advertise: `detail` says why), `down` (the adapter failed: `detail`) or `stopped`.
    package var state = "starting"
    package var detail: String?
    /// The advertised frame's mode name, sequence, temperature byte and bytes (hex, after the
    /// company id); absent while silent.
    package var mode: String?
    package var sequence: Int?
    package var temperature: Int?
    package var frame: String?
    /// `v1`, `v3` or `both` (`beacon.frame_version`); nil from older daemons.
    package var frameVersion: String?
    /// The signing time T of the v3 frame on the air; nil for v1 and while silent.
    package var signedAt: Int?
    /// Frames handed to the radio (each change once), and adapter reopenings.
    package var frames = 0
    package var restarts = 0
    /// With a heartbeat URL: GeoRacing's heartbeat to race control's panel.
    package var heartbeat: HeartbeatStatus?

    enum CodingKeys: String, CodingKey {
        case backend, adapter, zone, state, detail, mode
        case sequence = "seq"
        case temperature, frame, frames, restarts, heartbeat
        case frameVersion = "frame_version"
        case signedAt = "signed_at"
    }

    package init(backend: String, adapter: String, zone: Int) {
        self.backend = backend
        self.adapter = adapter
        self.zone = zone
    }

    package func render(into writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("backend"); writer.string(backend)
        writer.key("adapter"); writer.string(adapter)
        writer.key("zone"); writer.int(zone)
        writer.key("state"); writer.string(state)
        writer.key("detail"); writer.string(orNull: detail)
        writer.key("mode"); writer.string(orNull: mode)
        writer.key("seq"); writer.int(sequence)
        writer.key("temperature"); writer.int(temperature)
        writer.key("frame"); writer.string(orNull: frame)
        if let frameVersion { writer.key("frame_version"); writer.string(frameVersion) }
        if let signedAt { writer.key("signed_at"); writer.int(signedAt) }
        writer.key("frames"); writer.int(frames)
        writer.key("restarts"); writer.int(restarts)
        if let heartbeat { writer.key("heartbeat"); heartbeat.render(into: &writer) }
        writer.endObject()
    }

    /// One line for a terminal: "beacon hci0 zone 7: advertising red_flag seq 12 11°C (01…)".
    package var line: String { "beacon " + summary }

    /// The line without its label: "hci0 zone 7: advertising red_flag seq 12 11°C (01…)".
    package var summary: String {
        var text = "\(TerminalText.escaped(adapter)) zone \(zone): \(TerminalText.escaped(state))"
        if let mode { text += " \(mode)" }
        if let sequence { text += " seq \(sequence)" }
        if let temperature { text += " \(temperature)°C" }
        if let frame { text += " (\(frame))" }
        if let detail { text += " — \(TerminalText.escaped(detail))" }
        return text
    }
}

/// `status.beacon.heartbeat`: heartbeats sent (answered 2xx), failed, and why the last one failed.
package struct HeartbeatStatus: Hashable, Sendable, Decodable {
    /// Without credentials.
    package var url: String
    package var sent = 0
    package var failed = 0
    package var lastError: String?

    enum CodingKeys: String, CodingKey {
        case url, sent, failed
        case lastError = "last_error"
    }

    package init(url: String) { self.url = url }

    package func render(into writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("url"); writer.string(url)
        writer.key("sent"); writer.int(sent)
        writer.key("failed"); writer.int(failed)
        writer.key("last_error"); writer.string(orNull: lastError)
        writer.endObject()
    }
}
