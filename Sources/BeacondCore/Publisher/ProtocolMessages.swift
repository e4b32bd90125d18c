import BLEPayload
import CircuitState

/// The JSON lines of socket protocol v1 (docs/protocol.md). Every line is one object,
/// UTF-8, ending in "\n". A beacon has one shape everywhere: state, status and beacon messages.
enum ProtocolMessages {
    static let protocolVersion = 1

    static func hello() -> [UInt8] {
        line { writer in
            writer.key("type"); writer.string("hello")
            writer.key("protocol"); writer.int(protocolVersion)
            writer.key("version"); writer.string(BeacondVersion.current)
        }
    }

    static func pong() -> [UInt8] {
        line { writer in writer.key("type"); writer.string("pong") }
    }

    /// The last line on a connection the daemon closes; `reason` says why.
    static func bye(reason: String) -> [UInt8] {
        line { writer in
            writer.key("type"); writer.string("bye")
            writer.key("reason"); writer.string(reason)
        }
    }

    static func error(_ message: String) -> [UInt8] {
        line { writer in
            writer.key("type"); writer.string("error")
            writer.key("error"); writer.string(message)
        }
    }

    static func subscribed(beacons: Bool) -> [UInt8] {
        line { writer in
            writer.key("type"); writer.string("subscribed")
            writer.key("beacons"); writer.bool(beacons)
        }
    }

    static func dropped(_ count: Int) -> [UInt8] {
        line { writer in
            writer.key("type"); writer.string("dropped")
            writer.key("count"); writer.int(count)
        }
    }

    /// One complete line: an object whose fields `body` writes.
    static func line(_ body: (inout JSONWriter) -> Void) -> [UInt8] {
        var writer = JSONWriter()
        writer.beginObject()
        body(&writer)
        writer.endObject()
        writer.newline()
        return writer.bytes
    }

    /// The fields of a state message after `type` and `seq`.
    static func stateFields(_ view: PublicationView, into writer: inout JSONWriter) {
        let state = view.state
        writer.key("ts"); writer.seconds(micros: view.wallMicros)
        writer.key("mode"); writer.string(state.decision.modeName)
        writer.key("source"); writer.string(state.source.rawValue)
        writer.key("zone"); writer.int(state.zone)
        writer.key("beacon")
        if state.source == .beacon, let override = state.override {
            beacon(override: override, directory: view.directory.entry(for: override.key),
                   configuration: view.configuration, now: state.time, into: &writer)
        } else {
            writer.null()
        }
        writer.key("remote")
        remote(state.remote, now: state.time, into: &writer)
        writer.key("scanner")
        scanner(view.scanner, into: &writer)
    }

    static func remote(_ status: RemoteStatus?, now: Int64, into writer: inout JSONWriter) {
        guard let status else { return writer.null() }
        writer.beginObject()
        writer.key("mode"); writer.string(orNull: status.mode?.rawValue)
        writer.key("reported_mode"); writer.string(orNull: status.reportedMode?.rawValue)
        writer.key("fresh"); writer.bool(status.isFresh)
        writer.key("latched"); writer.bool(status.isLatched)
        writer.key("restored"); writer.bool(status.isRestored)
        writer.key("age_s")
        if let age = status.age { writer.number(Double(age) / 1_000_000, decimals: 3) } else { writer.null() }
        writer.key("message"); writer.string(orNull: status.message)
        writer.key("last_error"); writer.string(orNull: status.lastFailureReason)
        writer.endObject()
    }

    /// `detail` (why the scanner is down, say) goes into status replies only.
    static func scanner(_ scanner: ScannerStatus, detail: String? = nil, into writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("backend"); writer.string(scanner.backend)
        writer.key("state"); writer.string(scanner.state.rawValue)
        if let detail { writer.key("detail"); writer.string(detail) }
        writer.endObject()
    }

    /// The one beacon shape. `override` is the engine's active entry for the key, if any;
    /// `directory` what was last heard from it; `configuration` gives the ranging model for a
    /// beacon that is not an override.
    static func beacon(
        override: ActiveOverride?, directory: BeaconDirectory.Entry?, configuration: FusionConfiguration, now: Int64,
        into writer: inout JSONWriter
    ) {
        guard let key = override?.key ?? directory?.key, let signal = override?.signal ?? directory?.signal else {
            return writer.null()
        }
        writer.beginObject()
        writer.key("key"); writer.string(key.description)
        writer.key("kind"); writer.string(signal.version == .v1 ? "circuit" : "staff")
        writer.key("zone"); writer.int(signal.zone)
        writer.key("source_id"); writer.int(signal.sourceID)
        writer.key("addr"); writer.string(key.address.description)
        writer.key("mode"); writer.string(signal.mode.name)
        writer.key("rssi"); writer.int(directory?.rssi ?? override?.rssi)
        writer.key("distance_m")
        let heard = directory.flatMap {
            configuration.distance(smoothedRSSI: $0.window.smoothedRSSI, advertisedTXPower: $0.txPower)
        }
        if let distance = override?.distance ?? heard { writer.number(distance, decimals: 2) } else { writer.null() }
        writer.key("seq"); writer.int(signal.sequence)
        writer.key("ttl"); writer.int(signal.ttl)
        writer.key("active"); writer.bool(override != nil)
        writer.key("held"); writer.bool(override?.heldClaim != nil)
        writer.key("contested"); writer.bool(override?.isContested ?? false)
        writer.key("ttl_left_s")
        // Differences in Double: engine times may sit at both ends of Int64 (a replayed capture).
        if let override {
            writer.number(max(0, Double(override.expiresAt) - Double(now)) / 1_000_000, decimals: 3)
        } else {
            writer.null()
        }
        writer.key("last_seen_s")
        let lastSeen = directory?.lastSeen ?? override?.receivedAt
        if let lastSeen {
            writer.number(max(0, Double(now) - Double(lastSeen)) / 1_000_000, decimals: 3)
        } else {
            writer.null()
        }
        writer.key("temperature"); writer.int(signal.temperature)
        writer.key("rejected"); writer.string(orNull: directory?.rejection)
        writer.endObject()
    }
}

/// What one publication is made of.
struct PublicationView {
    var state: PublishedState
    var directory: BeaconDirectory
    var configuration: FusionConfiguration
    var scanner: ScannerStatus
    var wallMicros: Int64
}

/// The scanner backend's health, as the socket reports it.
package struct ScannerStatus: Hashable, Sendable {
    package enum State: String, Sendable {
        case up
        case down
        /// No scanner: replay finished, or none configured.
        case none
    }

    var backend: String
    var state: State
}
