import CircuitState

/// One Prometheus metric family the daemon exposes: its name (with the `beacond_` prefix and its
/// unit), type and help line. docs/metrics.md lists the same families; a test checks it does.
package struct MetricFamily: Hashable, Sendable {
    package enum Kind: String, Sendable {
        case counter
        case gauge
        case histogram
    }

    package let name: String
    package let kind: Kind
    package let help: String
}

/// Every family, declared once. The names follow Prometheus' conventions: `_total` for counters,
/// the base unit (`_seconds`) in the name, one family per meaning with labels for its parts.
package enum MetricCatalogue {
    package static let buildInfo = MetricFamily(
        name: "beacond_build_info", kind: .gauge, help: "Always 1; the version is in the label.")
    package static let uptime = MetricFamily(
        name: "beacond_uptime_seconds", kind: .gauge, help: "Seconds since the daemon started.")
    package static let trackMode = MetricFamily(
        name: "beacond_track_mode", kind: .gauge,
        help: "1 for the published track mode, 0 for the others; unknown before any decision.")
    package static let stateChanges = MetricFamily(
        name: "beacond_state_changes_total", kind: .counter,
        help: "State messages published to clients (each a new seq).")
    package static let signalsReceived = MetricFamily(
        name: "beacond_signals_received_total", kind: .counter,
        help: "GeoRacing signals the scanner handed to the fusion engine.")
    package static let signalsAccepted = MetricFamily(
        name: "beacond_signals_accepted_total", kind: .counter,
        help: "Signals the fusion engine accepted as a new or renewed claim.")
    package static let signalsRepeated = MetricFamily(
        name: "beacond_signals_repeated_total", kind: .counter,
        help: "Signals repeating a claim already in force (refreshing its TTL).")
    package static let signalsRejected = MetricFamily(
        name: "beacond_signals_rejected_total", kind: .counter,
        help: "Frames and signals that changed nothing, by reason.")
    package static let userBeacons = MetricFamily(
        name: "beacond_user_beacons_total", kind: .counter,
        help: "GeoRacing attendee user beacons heard: counted, never fused.")
    package static let signalsContested = MetricFamily(
        name: "beacond_signals_contested_total", kind: .counter,
        help: "Signals contradicting the claim in force for their key (possible spoofing).")
    package static let overridesActive = MetricFamily(
        name: "beacond_overrides_active", kind: .gauge, help: "Beacon overrides in force now.")
    package static let overridesExpired = MetricFamily(
        name: "beacond_overrides_expired_total", kind: .counter, help: "Overrides whose TTL ran out.")
    package static let overridesEvicted = MetricFamily(
        name: "beacond_overrides_evicted_total", kind: .counter,
        help: "Overrides evicted from the full table for a more severe one.")
    package static let remoteFetches = MetricFamily(
        name: "beacond_remote_fetches_total", kind: .counter, help: "Successful fetches of race control's state.")
    package static let remoteFailures = MetricFamily(
        name: "beacond_remote_failures_total", kind: .counter, help: "Failed fetches of race control's state.")
    package static let remoteAge = MetricFamily(
        name: "beacond_remote_age_seconds", kind: .gauge,
        help: "Age of the remote state in use; NaN before the first fetch or without a remote.")
    package static let remoteFresh = MetricFamily(
        name: "beacond_remote_fresh", kind: .gauge, help: "1 while the remote state is fresh, else 0.")
    package static let scannerUp = MetricFamily(
        name: "beacond_scanner_up", kind: .gauge,
        help: "1 while the scanner backend scans (up, or degraded: some of its adapters up), else 0.")
    package static let scannerDegraded = MetricFamily(
        name: "beacond_scanner_degraded", kind: .gauge,
        help: "1 while some of the scanner's adapters scan and some do not, else 0.")
    package static let adapterUp = MetricFamily(
        name: "beacond_scanner_adapter_up", kind: .gauge, help: "1 while this adapter scans, else 0.")
    package static let adapterReports = MetricFamily(
        name: "beacond_scanner_adapter_reports_total", kind: .counter,
        help: "Advertising reports this adapter delivered.")
    package static let adapterRestarts = MetricFamily(
        name: "beacond_scanner_adapter_restarts_total", kind: .counter,
        help: "Scans restarted on this adapter (hci: the silence watchdog).")
    package static let copiesDropped = MetricFamily(
        name: "beacond_scan_copies_dropped_total", kind: .counter,
        help: "Copies of an advert heard on another adapter too, dropped so the engine counts it once.")
    package static let kernelFilter = MetricFamily(
        name: "beacond_scanner_kernel_filter", kind: .gauge,
        help: "1 while the kernel drops the reports that carry no GeoRacing frame (hci), else 0.")
    package static let kernelFilterProbes = MetricFamily(
        name: "beacond_scanner_kernel_filter_probes_total", kind: .counter,
        help: "Times the silence watchdog lifted the kernel filter to listen for any device.")
    package static let scannerRestarts = MetricFamily(
        name: "beacond_scanner_restarts_total", kind: .counter,
        help: "Scanner restarts (the hci backend's silence and error restarts).")
    package static let reports = MetricFamily(
        name: "beacond_reports_total", kind: .counter,
        help: "Advertising reports the scanner backend received (replay: GeoRacing frames replayed).")
    package static let signalsDropped = MetricFamily(
        name: "beacond_scan_signals_dropped_total", kind: .counter,
        help: "Signals dropped because the hub's event loop was too far behind.")
    package static let clientsConnected = MetricFamily(
        name: "beacond_clients_connected", kind: .gauge, help: "Socket clients connected now.")
    package static let clientsRefused = MetricFamily(
        name: "beacond_clients_refused_total", kind: .counter,
        help: "Socket connections refused at socket.max_clients.")
    package static let clientsDisconnected = MetricFamily(
        name: "beacond_clients_disconnected_total", kind: .counter,
        help: "Socket clients the daemon disconnected, by reason.")
    package static let linesDropped = MetricFamily(
        name: "beacond_lines_dropped_total", kind: .counter,
        help: "Lines not sent to a slow client (superseded state lines are coalesced instead).")
    package static let mqttConnected = MetricFamily(
        name: "beacond_mqtt_connected", kind: .gauge,
        help: "1 while connected to the MQTT broker (mqtt.url), else 0; 0 without MQTT.")
    package static let mqttReconnects = MetricFamily(
        name: "beacond_mqtt_reconnects_total", kind: .counter,
        help: "Connections to the MQTT broker after the first.")
    package static let beaconAdvertising = MetricFamily(
        name: "beacond_beacon_advertising", kind: .gauge,
        help: "1 while the daemon's own transmitter advertises (beacon.zone), else 0.")
    package static let beaconFrames = MetricFamily(
        name: "beacond_beacon_frames_total", kind: .counter,
        help: "Frames the daemon's own transmitter handed to the radio (each change once).")
    package static let mqttSightingsDropped = MetricFamily(
        name: "beacond_mqtt_sightings_dropped_total", kind: .counter,
        help: "Beacon sightings not published because the MQTT broker was away or behind.")
    package static let signedAccepted = MetricFamily(
        name: "beacond_signed_accepted_total", kind: .counter,
        help: "Signed v3 frames that passed every check (the rejected are in beacond_signals_rejected_total).")
    package static let signedClockOffset = MetricFamily(
        name: "beacond_signed_clock_offset_seconds", kind: .gauge,
        help: "This machine's wall clock minus each v3 sender's, at its last accepted frame.")
    package static let publishLatency = MetricFamily(
        name: "beacond_publish_latency_seconds", kind: .histogram,
        help: "From the input a state change came from to its line handed to every client.")

    package static let all: [MetricFamily] = [
        buildInfo, uptime, trackMode, stateChanges, signalsReceived, signalsAccepted, signalsRepeated,
        signalsRejected, userBeacons, signalsContested, overridesActive, overridesExpired, overridesEvicted,
        remoteFetches,
        remoteFailures, remoteAge, remoteFresh, scannerUp, scannerDegraded, scannerRestarts, reports, signalsDropped,
        adapterUp, adapterReports, adapterRestarts, copiesDropped, kernelFilter, kernelFilterProbes,
        clientsConnected, clientsRefused, clientsDisconnected, linesDropped, mqttConnected, mqttReconnects,
        mqttSightingsDropped, beaconAdvertising, beaconFrames, signedAccepted, signedClockOffset, publishLatency,
    ]

    /// `beacond_track_mode`'s `mode` label: every mode, then `unknown` (no decision yet).
    package static let modeLabels: [String] = TrackMode.allCases.map(\.rawValue) + [Decision.undecided.modeName]

    /// Publish latency buckets, seconds: the daemon's target is 1 ms at p99, so the buckets are
    /// finest below it; the last ones catch a stalled loop or a late timer.
    package static let latencyBuckets: [Duration] = [
        .microseconds(50), .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1),
        .microseconds(2500), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
        .milliseconds(100), .milliseconds(250), .seconds(1), .microseconds(2_500_000),
    ]
}
