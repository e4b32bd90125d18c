import BLEPayload
import CircuitState

/// The one beacon shape (docs/protocol.md, "The beacon shape"): `state.beacon`,
/// `status.overrides[]`, `status.beacons[]` and the `beacon` message.
package struct BeaconReport: Hashable, Sendable, Decodable {
    package var key: String
    /// `circuit` (v1 or v3 circuit frame), `staff` (v2 or v3 staff frame) or `command`.
    package var kind: String
    package var zone: Int
    /// The configured name of a circuit beacon's zone (`zones.names`); nil for staff beacons, an
    /// unnamed zone, or an older daemon.
    package var zoneName: String?
    package var sourceID: Int?
    package var address: String
    package var mode: String
    package var rssi: Int?
    package var distance: Double?
    /// The beacon's own sequence number (not the publication `seq`).
    package var sequence: Int
    package var ttl: Int
    package var active: Bool
    package var held: Bool
    package var contested: Bool
    package var ttlLeft: Double?
    package var lastSeen: Double?
    package var temperature: Int?
    package var rejected: String?
    /// The claim is a verified v3 frame's (docs/security.md); nil from daemons before v3.
    package var signed: Bool?

    enum CodingKeys: String, CodingKey {
        case key, kind, zone
        case zoneName = "zone_name"
        case sourceID = "source_id"
        case address = "addr"
        case mode, rssi
        case distance = "distance_m"
        case sequence = "seq"
        case ttl, active, held, contested
        case ttlLeft = "ttl_left_s"
        case lastSeen = "last_seen_s"
        case temperature, rejected, signed
    }

    package init(
        key: String, kind: String, zone: Int, zoneName: String? = nil, sourceID: Int?, address: String, mode: String,
        rssi: Int?, distance: Double?, sequence: Int, ttl: Int, active: Bool, held: Bool, contested: Bool,
        ttlLeft: Double?, lastSeen: Double?, temperature: Int?, rejected: String?, signed: Bool = false
    ) {
        self.signed = signed
        self.key = key
        self.kind = kind
        self.zone = zone
        self.zoneName = zoneName
        self.sourceID = sourceID
        self.address = address
        self.mode = mode
        self.rssi = rssi
        self.distance = distance
        self.sequence = sequence
        self.ttl = ttl
        self.active = active
        self.held = held
        self.contested = contested
        self.ttlLeft = ttlLeft
        self.lastSeen = lastSeen
        self.temperature = temperature
        self.rejected = rejected
    }

    package func render(into writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("key"); writer.string(key)
        writer.key("kind"); writer.string(kind)
        writer.key("zone"); writer.int(zone)
        writer.key("zone_name"); writer.string(orNull: zoneName)
        writer.key("source_id"); writer.int(sourceID)
        writer.key("addr"); writer.string(address)
        writer.key("mode"); writer.string(mode)
        writer.key("rssi"); writer.int(rssi)
        writer.key("distance_m"); writer.number(orNull: distance, decimals: 2)
        writer.key("seq"); writer.int(sequence)
        writer.key("ttl"); writer.int(ttl)
        writer.key("active"); writer.bool(active)
        writer.key("held"); writer.bool(held)
        writer.key("contested"); writer.bool(contested)
        writer.key("ttl_left_s"); writer.number(orNull: ttlLeft, decimals: 3)
        writer.key("last_seen_s"); writer.number(orNull: lastSeen, decimals: 3)
        writer.key("temperature"); writer.int(temperature)
        writer.key("rejected"); writer.string(orNull: rejected)
        writer.key("signed"); writer.bool(signed ?? false)
        writer.endObject()
    }
}

/// Race control's state (docs/protocol.md, "remote").
package struct RemoteReport: Hashable, Sendable, Decodable {
    package var mode: String?
    package var reportedMode: String?
    package var fresh: Bool
    package var latched: Bool
    /// The state was restored from the state file after a restart and not fetched since.
    package var restored: Bool
    package var age: Double?
    package var message: String?
    package var lastError: String?
    /// Race control's temperature, °C, when its last fetch gave one (a beacon advertises it);
    /// absent otherwise and from older daemons.
    package var temperature: Double?
    /// Race control's `evacuation_route`, when its last fetch gave one; absent otherwise and from
    /// older daemons.
    package var evacuationRoute: String?

    enum CodingKeys: String, CodingKey {
        case mode
        case reportedMode = "reported_mode"
        case fresh, latched, restored
        case age = "age_s"
        case message
        case lastError = "last_error"
        case temperature
        case evacuationRoute = "evacuation_route"
    }

    package init(
        mode: String?, reportedMode: String?, fresh: Bool, latched: Bool, restored: Bool, age: Double?,
        message: String?, lastError: String?
    ) {
        self.mode = mode
        self.reportedMode = reportedMode
        self.fresh = fresh
        self.latched = latched
        self.restored = restored
        self.age = age
        self.message = message
        self.lastError = lastError
    }

    package init(_ status: RemoteStatus) {
        self.init(
            mode: status.mode?.rawValue, reportedMode: status.reportedMode?.rawValue, fresh: status.isFresh,
            latched: status.isLatched, restored: status.isRestored,
            age: status.age.map { Double($0) / 1_000_000 }, message: status.message,
            lastError: status.lastFailureReason)
        temperature = status.snapshot?.temperature
        evacuationRoute = status.evacuationRoute
    }

    /// Older daemons sent no `restored`: absent means false.
    package init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        mode = try container.decodeIfPresent(String.self, forKey: .mode)
        reportedMode = try container.decodeIfPresent(String.self, forKey: .reportedMode)
        fresh = try container.decode(Bool.self, forKey: .fresh)
        latched = try container.decode(Bool.self, forKey: .latched)
        restored = try container.decodeIfPresent(Bool.self, forKey: .restored) ?? false
        age = try container.decodeIfPresent(Double.self, forKey: .age)
        message = try container.decodeIfPresent(String.self, forKey: .message)
        lastError = try container.decodeIfPresent(String.self, forKey: .lastError)
        temperature = try container.decodeIfPresent(Double.self, forKey: .temperature)
        evacuationRoute = try container.decodeIfPresent(String.self, forKey: .evacuationRoute)
    }

    package func render(into writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("mode"); writer.string(orNull: mode)
        writer.key("reported_mode"); writer.string(orNull: reportedMode)
        writer.key("fresh"); writer.bool(fresh)
        writer.key("latched"); writer.bool(latched)
        writer.key("restored"); writer.bool(restored)
        writer.key("age_s"); writer.number(orNull: age, decimals: 3)
        writer.key("message"); writer.string(orNull: message)
        writer.key("last_error"); writer.string(orNull: lastError)
        if let temperature { writer.key("temperature"); writer.number(orNull: temperature, decimals: 1) }
        if let evacuationRoute { writer.key("evacuation_route"); writer.string(evacuationRoute) }
        writer.endObject()
    }
}

extension Optional where Wrapped == RemoteReport {
    package func render(into writer: inout JSONWriter) {
        if let self { self.render(into: &writer) } else { writer.null() }
    }
}
