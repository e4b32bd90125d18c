/// `{"type":"status",…}`: the answer to `{"cmd":"status"}` (docs/protocol.md, "status"). The
/// hub fills the state, lists and counters; each edge adds its own typed part (`server`,
/// `scan`, `hci` or `bluez`, `remote_poller`, `mqtt`, `config`) through the hub's status providers.
package struct StatusMessage: Hashable, Sendable, Decodable, RenderedMessage {
    package var protocolVersion: Int
    package var version: String
    package var uptime: Double
    package var state: StateMessage
    package var overrides: [BeaconReport]
    package var overridesOmitted: Int
    package var beacons: [BeaconReport]
    package var beaconsOmitted: Int
    package var remote: RemoteReport?
    package var scanner: ScannerStatus
    package var counters: HubStatusCounters
    package var scan: ScanStatus?
    package var hci: HCIBackendStatus?
    package var bluez: BlueZStatus?
    package var remotePoller: RemotePollerStatus?
    package var server: ServerStatus?
    /// The MQTT publisher's health (`mqtt.url` set); nil otherwise.
    package var mqtt: MqttStatus?
    /// Which config file is in force and how reloads went (`beacond run`); nil from other servers.
    package var config: ConfigStatus?
    /// The daemon's own transmitter (`beacon.zone` set); nil otherwise.
    package var beacon: BeaconStatus?
    /// GeoRacing v3 frames as verified (docs/security.md); nil from older daemons.
    package var signed: SignedFramesStatus?
    /// Devices heard that are not GeoRacing beacons, strongest first: only in the answer to
    /// `{"cmd":"status","devices":true}` (nil otherwise, and from older daemons).
    package var devices: [DeviceReport]?
    package var devicesCounters: DeviceCounters?

    enum CodingKeys: String, CodingKey {
        case protocolVersion = "protocol"
        case version
        case uptime = "uptime_s"
        case state, overrides
        case overridesOmitted = "overrides_omitted"
        case beacons
        case beaconsOmitted = "beacons_omitted"
        case remote, scanner, counters, scan, hci, bluez
        case remotePoller = "remote_poller"
        case server, devices, mqtt, config, beacon, signed
        case devicesCounters = "devices_counters"
    }

    package init(
        protocolVersion: Int = ProtocolVersion.current, version: String = BeacondVersion.current, uptime: Double,
        state: StateMessage, overrides: [BeaconReport], overridesOmitted: Int, beacons: [BeaconReport],
        beaconsOmitted: Int, remote: RemoteReport?, scanner: ScannerStatus, counters: HubStatusCounters,
        signed: SignedFramesStatus? = nil
    ) {
        self.signed = signed
        self.protocolVersion = protocolVersion
        self.version = version
        self.uptime = uptime
        self.state = state
        self.overrides = overrides
        self.overridesOmitted = overridesOmitted
        self.beacons = beacons
        self.beaconsOmitted = beaconsOmitted
        self.remote = remote
        self.scanner = scanner
        self.counters = counters
    }

    package func render(into writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("type"); writer.string("status")
        writer.key("protocol"); writer.int(protocolVersion)
        writer.key("version"); writer.string(version)
        writer.key("uptime_s"); writer.number(uptime, decimals: 3)
        writer.key("state")
        writer.beginObject()
        state.renderFields(into: &writer)
        writer.endObject()
        writer.key("overrides")
        writer.beginArray()
        for beacon in overrides { beacon.render(into: &writer) }
        writer.endArray()
        writer.key("overrides_omitted"); writer.int(overridesOmitted)
        writer.key("beacons")
        writer.beginArray()
        for beacon in beacons { beacon.render(into: &writer) }
        writer.endArray()
        writer.key("beacons_omitted"); writer.int(beaconsOmitted)
        writer.key("remote"); remote.render(into: &writer)
        writer.key("scanner"); scanner.render(into: &writer)
        writer.key("counters"); counters.render(into: &writer)
        if let scan { writer.key("scan"); scan.render(into: &writer) }
        if let hci { writer.key("hci"); hci.render(into: &writer) }
        if let bluez { writer.key("bluez"); bluez.render(into: &writer) }
        if let remotePoller { writer.key("remote_poller"); remotePoller.render(into: &writer) }
        if let server { writer.key("server"); server.render(into: &writer) }
        if let mqtt { writer.key("mqtt"); mqtt.render(into: &writer) }
        if let config { writer.key("config"); config.render(into: &writer) }
        if let beacon { writer.key("beacon"); beacon.render(into: &writer) }
        if let signed { writer.key("signed"); signed.render(into: &writer) }
        if let devices {
            writer.key("devices")
            writer.beginArray()
            for device in devices { device.render(into: &writer) }
            writer.endArray()
        }
        if let devicesCounters { writer.key("devices_counters"); devicesCounters.render(into: &writer) }
        writer.endObject()
    }
}

/// `status.counters`: the hub's and the fusion engine's counters since start.
package struct HubStatusCounters: Hashable, Sendable, Decodable {
    package var signals = 0
    package var rejectedFrames = 0
    package var accepted = 0
    package var repeats = 0
    package var olderIgnored = 0
    package var contests = 0
    package var contestedFrames = 0
    package var filteredRSSI = 0
    package var filteredZone = 0
    package var filteredAllow = 0
    package var filteredDistance = 0
    package var filteredUnknownMode = 0
    package var expired = 0
    package var evicted = 0
    package var refused = 0
    /// Active overrides now.
    package var overrides = 0
    package var beaconsForgotten = 0
    package var remoteFetches = 0
    package var remoteFailures = 0
    package var published = 0
    package var beaconUpdates = 0
    /// Beacon updates dropped for want of room; nil from older daemons, which do not send it.
    package var beaconUpdatesDropped: Int?
    /// Attendees' user beacons heard (never fused, never in `rejected_frames`); nil from older daemons.
    package var userBeacons: Int?
    /// Staff command frames listed but not fused (`fusion.command_frames: report`); nil from older daemons.
    package var filteredReportOnly: Int?
    /// Unsigned frames that would have lowered or cleared a signed claim; nil from older daemons.
    package var belowSigned: Int?
    /// Unsigned frames not fused (`security.unsigned: reject`); nil from older daemons.
    package var filteredUnsigned: Int?
    package var statusReused = 0
    package var subscribers = 0

    enum CodingKeys: String, CodingKey {
        case signals
        case rejectedFrames = "rejected_frames"
        case accepted, repeats
        case olderIgnored = "older_ignored"
        case contests
        case contestedFrames = "contested_frames"
        case filteredRSSI = "filtered_rssi"
        case filteredZone = "filtered_zone"
        case filteredAllow = "filtered_allow"
        case filteredDistance = "filtered_distance"
        case filteredUnknownMode = "filtered_unknown_mode"
        case expired, evicted, refused, overrides
        case beaconsForgotten = "beacons_forgotten"
        case remoteFetches = "remote_fetches"
        case remoteFailures = "remote_failures"
        case published
        case beaconUpdates = "beacon_updates"
        case beaconUpdatesDropped = "beacon_updates_dropped"
        case userBeacons = "user_beacons"
        case filteredReportOnly = "filtered_report_only"
        case belowSigned = "below_signed"
        case filteredUnsigned = "filtered_unsigned"
        case statusReused = "status_reused"
        case subscribers
    }

    package init() {}

    package func render(into writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("signals"); writer.int(signals)
        writer.key("rejected_frames"); writer.int(rejectedFrames)
        writer.key("accepted"); writer.int(accepted)
        writer.key("repeats"); writer.int(repeats)
        writer.key("older_ignored"); writer.int(olderIgnored)
        writer.key("contests"); writer.int(contests)
        writer.key("contested_frames"); writer.int(contestedFrames)
        writer.key("filtered_rssi"); writer.int(filteredRSSI)
        writer.key("filtered_zone"); writer.int(filteredZone)
        writer.key("filtered_allow"); writer.int(filteredAllow)
        writer.key("filtered_distance"); writer.int(filteredDistance)
        writer.key("filtered_unknown_mode"); writer.int(filteredUnknownMode)
        writer.key("expired"); writer.int(expired)
        writer.key("evicted"); writer.int(evicted)
        writer.key("refused"); writer.int(refused)
        writer.key("overrides"); writer.int(overrides)
        writer.key("beacons_forgotten"); writer.int(beaconsForgotten)
        writer.key("remote_fetches"); writer.int(remoteFetches)
        writer.key("remote_failures"); writer.int(remoteFailures)
        writer.key("published"); writer.int(published)
        writer.key("beacon_updates"); writer.int(beaconUpdates)
        if let beaconUpdatesDropped { writer.key("beacon_updates_dropped"); writer.int(beaconUpdatesDropped) }
        if let userBeacons { writer.key("user_beacons"); writer.int(userBeacons) }
        if let filteredReportOnly { writer.key("filtered_report_only"); writer.int(filteredReportOnly) }
        if let belowSigned { writer.key("below_signed"); writer.int(belowSigned) }
        if let filteredUnsigned { writer.key("filtered_unsigned"); writer.int(filteredUnsigned) }
        writer.key("status_reused"); writer.int(statusReused)
        writer.key("subscribers"); writer.int(subscribers)
        writer.endObject()
    }
}
