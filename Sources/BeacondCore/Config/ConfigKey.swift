/// Every key of the config file, by its dotted path, with its flag and how a reload treats it.
enum ConfigKey: String, CaseIterable, Hashable, Sendable, Comparable {
    case scannerBackend = "scanner.backend"
    case scannerAdapter = "scanner.adapter"
    case scannerCompanyID = "scanner.company_id"
    case scannerReplay = "scanner.replay"
    case scannerSpeed = "scanner.speed"
    case scannerLoop = "scanner.loop"
    case scannerSilenceRestart = "scanner.silence_restart_s"
    case scannerActive = "scanner.active"
    case scannerScanInterval = "scanner.scan_interval_ms"
    case scannerScanWindow = "scanner.scan_window_ms"
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
    case socketPath = "socket.path"
    case socketMaxClients = "socket.max_clients"
    case stateDir = "state_dir"
    case logLevel = "log.level"
    case recordPath = "record.path"
    case recordMaxMB = "record.max_mb"
    case recordKeep = "record.keep"

    static func < (lhs: ConfigKey, rhs: ConfigKey) -> Bool {
        (allCases.firstIndex(of: lhs) ?? 0) < (allCases.firstIndex(of: rhs) ?? 0)
    }

    /// The `beacond run` flag that overrides this key, if any.
    var flag: String? {
        switch self {
        case .scannerBackend: "--backend"
        case .scannerAdapter: "--adapter"
        case .scannerCompanyID: "--company-id"
        case .scannerReplay: "--replay"
        case .scannerSpeed: "--speed"
        case .scannerLoop: "--loop"
        case .scannerActive: "--active"
        case .scannerScanInterval: "--scan-interval-ms"
        case .scannerScanWindow: "--scan-window-ms"
        case .remoteURL: "--remote-url"
        case .remotePollInterval: "--poll-interval"
        case .remoteTimeout: "--timeout"
        case .remoteStaleAfter: "--stale-after"
        case .fusionPolicy: "--policy"
        case .fusionMinRSSI: "--min-rssi"
        case .fusionZones: "--zones"
        case .fusionDeescalationHold: "--deescalation-hold"
        case .socketPath: "--socket"
        case .stateDir: "--state-dir"
        case .recordPath: "--record"
        case .recordMaxMB: "--record-max-mb"
        case .recordKeep: "--record-keep"
        case .logLevel: "--log-level"
        case .scannerSilenceRestart, .remoteCAFile, .remoteBearerTokenFile, .fusionMaxTTL, .fusionAllow,
            .fusionMaxDistance, .fusionReferencePower, .fusionMaxEntries, .socketMaxClients:
            nil
        }
    }

    /// Whether a SIGHUP reload applies a change of this key to the running daemon.
    /// Other changes are logged as needing a restart, and the running value stays.
    var isLiveReloadable: Bool {
        switch self {
        case .remoteURL, .remotePollInterval, .remoteTimeout, .remoteStaleAfter, .remoteCAFile,
            .remoteBearerTokenFile, .fusionPolicy, .fusionMinRSSI, .fusionZones, .fusionMaxTTL, .fusionAllow,
            .fusionMaxDistance, .fusionDeescalationHold, .fusionReferencePower, .logLevel:
            true
        case .scannerBackend, .scannerAdapter, .scannerCompanyID, .scannerReplay, .scannerSpeed, .scannerLoop,
            .scannerSilenceRestart, .scannerActive, .scannerScanInterval, .scannerScanWindow, .fusionMaxEntries,
            .socketPath, .socketMaxClients, .stateDir, .recordPath, .recordMaxMB, .recordKeep:
            false
        }
    }

    /// Keys whose values are paths: relative ones in a config file are resolved against its directory.
    var isPath: Bool {
        switch self {
        case .scannerReplay, .remoteCAFile, .remoteBearerTokenFile, .socketPath, .stateDir, .recordPath: true
        default: false
        }
    }

    /// The sections (`scanner`, `remote`, ...) keys are nested in.
    static let sections: Set<String> = Set(allCases.compactMap { key in
        key.rawValue.firstIndex(of: ".").map { String(key.rawValue[..<$0]) }
    })

    /// The key a flag overrides.
    static func forFlag(_ flag: String) -> ConfigKey? { allCases.first { $0.flag == flag } }
}
