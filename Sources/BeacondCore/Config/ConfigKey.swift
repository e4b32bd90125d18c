/// Every key of the config file, by its dotted path. Its flag, parser, formatter and reload class are
/// its row in the key table (`ConfigKey.spec`, ConfigKeyTable.swift).
package enum ConfigKey: String, CaseIterable, Hashable, Sendable, Comparable {
    case scannerBackend = "scanner.backend"
    case scannerAdapter = "scanner.adapter"
    case scannerCompanyID = "scanner.company_id"
    case scannerReplay = "scanner.replay"
    case scannerSpeed = "scanner.speed"
    case scannerLoop = "scanner.loop"
    case scannerSilenceRestart = "scanner.silence_restart_s"
    case scannerActive = "scanner.active"
    case scannerKernelFilter = "scanner.kernel_filter"
    case scannerScanInterval = "scanner.scan_interval_ms"
    case scannerScanWindow = "scanner.scan_window_ms"
    case scannerBlueZRefresh = "scanner.bluez_refresh_s"
    case remoteURL = "remote.url"
    case remotePollInterval = "remote.poll_interval"
    case remoteTimeout = "remote.timeout"
    case remoteStaleAfter = "remote.stale_after"
    case remoteCAFile = "remote.ca_file"
    case remoteBearerTokenFile = "remote.bearer_token_file"
    case fusionPolicy = "fusion.policy"
    case fusionMinRSSI = "fusion.min_rssi"
    case fusionZones = "fusion.zones"
    case fusionMaxTTL = "fusion.max_ttl"
    case fusionDeescalationHold = "fusion.deescalation_hold"
    case fusionAllow = "fusion.allow"
    case fusionMaxDistance = "fusion.max_distance_m"
    case fusionReferencePower = "fusion.p1m_dbm"
    case fusionMaxEntries = "fusion.max_entries"
    case fusionCommandFrames = "fusion.command_frames"
    case socketPath = "socket.path"
    case socketMaxClients = "socket.max_clients"
    case stateDir = "state_dir"
    case logLevel = "log.level"
    case recordPath = "record.path"
    case recordMaxMB = "record.max_mb"
    case recordKeep = "record.keep"
    case zonesNames = "zones.names"
    case metricsListen = "metrics.listen"
    case mqttURL = "mqtt.url"
    case mqttNode = "mqtt.node"
    case mqttClientID = "mqtt.client_id"
    case mqttUsername = "mqtt.username"
    case mqttPasswordFile = "mqtt.password_file"
    case mqttCAFile = "mqtt.ca_file"
    case mqttTopicPrefix = "mqtt.topic_prefix"
    case mqttQoSState = "mqtt.qos_state"
    case beaconZone = "beacon.zone"
    case beaconBackend = "beacon.backend"
    case beaconAdapter = "beacon.adapter"
    case beaconInterval = "beacon.interval"
    case beaconFrameVersion = "beacon.frame_version"
    case beaconSourceID = "beacon.source_id"
    case beaconHeartbeatURL = "beacon.heartbeat_url"
    case beaconHeartbeatCAFile = "beacon.heartbeat_ca_file"
    case beaconUID = "beacon.uid"
    case securityKeyFile = "security.key_file"
    case securityUnsigned = "security.unsigned"
    case securityClockWindow = "security.clock_window"
    case kioskLanguages = "kiosk.languages"
    case kioskLanguagePeriod = "kiosk.language_period"
    case kioskLanguageDir = "kiosk.language_dir"
    case kioskExitDirection = "kiosk.exit.direction"
    case kioskExitName = "kiosk.exit.name"
    case kioskExitDistance = "kiosk.exit.distance_m"
    case kioskSpeak = "kiosk.speak"
    case kioskSpeakRepeat = "kiosk.speak_repeat"
    case kioskAudioDevice = "kiosk.audio_device"

    package static func < (lhs: ConfigKey, rhs: ConfigKey) -> Bool {
        (allCases.firstIndex(of: lhs) ?? 0) < (allCases.firstIndex(of: rhs) ?? 0)
    }

    /// The sections (`scanner`, `remote`, `kiosk.exit`, ...) keys are nested in.
    static let sections: Set<String> = Set(
        allCases.flatMap { key in
            let parts = key.rawValue.split(separator: ".")
            return (1..<max(parts.count, 1)).map { parts.prefix($0).joined(separator: ".") }
        })

    /// The program a key is for: `beacond kiosk` reads the `kiosk.*` keys, everything else is the
    /// daemon's (`run`, `beacon`, `replay`). Each program checks its own keys and accepts the other's
    /// by name alone, so one file can serve a kiosk's daemon and its screen.
    package enum Reader: Hashable, Sendable {
        case daemon, kiosk
    }

    package var reader: Reader { rawValue.hasPrefix("kiosk.") ? .kiosk : .daemon }

    /// The key a flag overrides.
    package static func forFlag(_ flag: String) -> ConfigKey? { allCases.first { $0.flag == flag } }
}
