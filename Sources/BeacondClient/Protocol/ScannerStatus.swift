/// The scanner backend's health (docs/protocol.md, "scanner"). `detail` (why, in words) and each
/// adapter's counters are part of status replies only, never of state messages.
package struct ScannerStatus: Hashable, Sendable, Decodable {
    package enum State: String, Sendable, Decodable {
        case up
        /// Several adapters: at least one scanning, at least one not.
        case degraded
        case down
        /// No scanner: replay finished, or none configured.
        case none
    }

    package var backend: String
    package var state: State
    package var detail: String?
    /// Each adapter scanned, in the order configured (then found); empty for replay.
    package var adapters: [AdapterHealth]

    enum CodingKeys: String, CodingKey {
        case backend, state, detail, adapters
    }

    package init(backend: String, state: State, detail: String? = nil, adapters: [AdapterHealth] = []) {
        self.backend = backend
        self.state = state
        self.detail = detail
        self.adapters = adapters
    }

    /// Daemons before several adapters send no `adapters`: read as none.
    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        backend = try container.decode(String.self, forKey: .backend)
        state = try container.decode(State.self, forKey: .state)
        detail = try container.decodeIfPresent(String.self, forKey: .detail)
        adapters = try container.decodeIfPresent([AdapterHealth].self, forKey: .adapters) ?? []
    }

    /// The state for people (`status`, `watch`): "up", "degraded", "down", and for no scanner
    /// "finished" after a replay, "off" otherwise. The protocol keeps `none`.
    package var stateInWords: String {
        switch state {
        case .up: "up"
        case .degraded: "degraded"
        case .down: "down"
        case .none: backend == "replay" ? "finished" : "off"
        }
    }

    /// Some adapter hears beacons: `up` or `degraded`.
    package var isScanning: Bool { state == .up || state == .degraded }

    package func render(into writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("backend"); writer.string(backend)
        writer.key("state"); writer.string(state.rawValue)
        if let detail { writer.key("detail"); writer.string(detail) }
        writer.key("adapters")
        writer.beginArray()
        for adapter in adapters { adapter.render(into: &writer) }
        writer.endArray()
        writer.endObject()
    }
}

/// One adapter's health in `scanner.adapters`. A state message carries `name` and `state`; a
/// status reply adds `detail` and the counters.
package struct AdapterHealth: Hashable, Sendable, Decodable {
    package enum State: String, Sendable, Decodable {
        case up
        /// Not scanning, and never was in this run: missing, down or refused; retried.
        case down
        /// Was scanning, lost it (gone, downed, failed); retried.
        case recovering
        /// Stopped.
        case none
    }

    package var name: String
    package var state: State
    package var detail: String?
    /// Advertising reports this adapter delivered; status replies only.
    package var reports: Int?
    /// Scans restarted by the silence watchdog; status replies only.
    package var restarts: Int?
    /// Times the adapter came back after being lost; status replies only.
    package var reconnects: Int?

    package init(
        name: String, state: State, detail: String? = nil, reports: Int? = nil, restarts: Int? = nil,
        reconnects: Int? = nil
    ) {
        self.name = name
        self.state = state
        self.detail = detail
        self.reports = reports
        self.restarts = restarts
        self.reconnects = reconnects
    }

    /// Only what a state message carries: a change of it is published.
    package var published: AdapterHealth { AdapterHealth(name: name, state: state) }

    package func render(into writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("name"); writer.string(name)
        writer.key("state"); writer.string(state.rawValue)
        if let detail { writer.key("detail"); writer.string(detail) }
        if let reports { writer.key("reports"); writer.int(reports) }
        if let restarts { writer.key("restarts"); writer.int(restarts) }
        if let reconnects { writer.key("reconnects"); writer.int(reconnects) }
        writer.endObject()
    }
}
