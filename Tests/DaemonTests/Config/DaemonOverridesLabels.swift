@testable import BeacondClient
@testable import BeacondCore

extension DaemonOverrides {
    /// The overrides by flag, labelled, for tests: `DaemonOverrides(policy: "safety", minRSSI: "-80")`.
    /// The daemon builds them from `ConfigFlag`s (the key table's flags) instead.
    init(
        backend: String? = nil, adapter: String? = nil, companyID: String? = nil, replay: String? = nil,
        speed: String? = nil, loop: Bool? = nil, remoteURL: String? = nil, pollInterval: String? = nil,
        timeout: String? = nil, staleAfter: String? = nil, policy: String? = nil, minRSSI: String? = nil,
        zones: String? = nil, socket: String? = nil, stateDir: String? = nil, record: String? = nil,
        logLevel: String? = nil, active: Bool? = nil, scanIntervalMs: String? = nil, scanWindowMs: String? = nil,
        recordMaxMB: String? = nil, recordKeep: String? = nil, deescalationHold: String? = nil,
        metrics: String? = nil, mqttURL: String? = nil, mqttNode: String? = nil, keyFile: String? = nil,
        unsigned: String? = nil, clockWindow: String? = nil
    ) {
        let given: [(ConfigKey, String?)] = [
            (.scannerBackend, backend), (.scannerAdapter, adapter), (.scannerCompanyID, companyID),
            (.scannerReplay, replay), (.scannerSpeed, speed), (.scannerLoop, loop.map { String($0) }),
            (.remoteURL, remoteURL), (.remotePollInterval, pollInterval), (.remoteTimeout, timeout),
            (.remoteStaleAfter, staleAfter), (.fusionPolicy, policy), (.fusionMinRSSI, minRSSI),
            (.fusionZones, zones), (.fusionDeescalationHold, deescalationHold), (.socketPath, socket),
            (.stateDir, stateDir), (.recordPath, record), (.logLevel, logLevel),
            (.scannerActive, active.map { String($0) }), (.scannerScanInterval, scanIntervalMs),
            (.scannerScanWindow, scanWindowMs), (.recordMaxMB, recordMaxMB), (.recordKeep, recordKeep),
            (.metricsListen, metrics), (.mqttURL, mqttURL), (.mqttNode, mqttNode), (.securityKeyFile, keyFile),
            (.securityUnsigned, unsigned), (.securityClockWindow, clockWindow),
        ]
        self.init(given.map { key, text in text.map { ConfigFlag(key, $0) } })
    }
}
