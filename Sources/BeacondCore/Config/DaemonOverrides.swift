/// The `beacond run` flags that override config file keys. nil: not given, the file (or the default) stands.
///
/// Values are the flags' text, checked by the same rules as the file, so `--stale-after 2.5` and
/// `remote.stale_after: 2.5` mean the same and fail the same way.
package struct DaemonOverrides: Hashable, Sendable {
    package var backend: String?
    package var adapter: String?
    package var companyID: String?
    var replay: String?
    var speed: String?
    var loop: Bool?
    var remoteURL: String?
    var pollInterval: String?
    var timeout: String?
    var staleAfter: String?
    var policy: String?
    var minRSSI: String?
    var zones: String?
    var socket: String?
    var stateDir: String?
    package var record: String?
    var logLevel: String?
    package var active: Bool?
    package var scanIntervalMs: String?
    package var scanWindowMs: String?
    package var recordMaxMB: String?
    package var recordKeep: String?
    var deescalationHold: String?

    package init(
        backend: String? = nil, adapter: String? = nil, companyID: String? = nil, replay: String? = nil,
        speed: String? = nil, loop: Bool? = nil, remoteURL: String? = nil, pollInterval: String? = nil,
        timeout: String? = nil, staleAfter: String? = nil, policy: String? = nil, minRSSI: String? = nil,
        zones: String? = nil, socket: String? = nil, stateDir: String? = nil, record: String? = nil,
        logLevel: String? = nil, active: Bool? = nil, scanIntervalMs: String? = nil, scanWindowMs: String? = nil,
        recordMaxMB: String? = nil, recordKeep: String? = nil, deescalationHold: String? = nil
    ) {
        self.backend = backend
        self.adapter = adapter
        self.companyID = companyID
        self.replay = replay
        self.speed = speed
        self.loop = loop
        self.remoteURL = remoteURL
        self.pollInterval = pollInterval
        self.timeout = timeout
        self.staleAfter = staleAfter
        self.policy = policy
        self.minRSSI = minRSSI
        self.zones = zones
        self.socket = socket
        self.stateDir = stateDir
        self.record = record
        self.logLevel = logLevel
        self.active = active
        self.scanIntervalMs = scanIntervalMs
        self.scanWindowMs = scanWindowMs
        self.recordMaxMB = recordMaxMB
        self.recordKeep = recordKeep
        self.deescalationHold = deescalationHold
    }

    /// The given flags, as (key, text), in key order.
    var values: [(key: ConfigKey, text: String)] {
        let all: [(ConfigKey, String?)] = [
            (.scannerBackend, backend), (.scannerAdapter, adapter), (.scannerCompanyID, companyID),
            (.scannerReplay, replay), (.scannerSpeed, speed), (.scannerLoop, loop.map { String($0) }),
            (.remoteURL, remoteURL), (.remotePollInterval, pollInterval), (.remoteTimeout, timeout),
            (.remoteStaleAfter, staleAfter), (.fusionPolicy, policy), (.fusionMinRSSI, minRSSI),
            (.fusionZones, zones), (.fusionDeescalationHold, deescalationHold), (.socketPath, socket),
            (.stateDir, stateDir), (.recordPath, record),
            (.logLevel, logLevel), (.scannerActive, active.map { String($0) }),
            (.scannerScanInterval, scanIntervalMs), (.scannerScanWindow, scanWindowMs),
            (.recordMaxMB, recordMaxMB), (.recordKeep, recordKeep),
        ]
        return all.compactMap { key, text in text.map { (key, $0) } }
    }

    /// `configuration` with these flags on top, then checked as a whole. Every bad flag is reported,
    /// naming the flag and its key. Relative paths stay relative to the working directory.
    func applied(to configuration: DaemonConfiguration) throws(ConfigurationError) -> DaemonConfiguration {
        var result = configuration
        var problems: [ConfigurationProblem] = []
        for (key, text) in values {
            let flag = key.flag ?? key.rawValue
            result.origins[key] = .flag(flag)
            do throws(ConfigValueProblem) {
                try result.set(key, to: .flag(text), relativeTo: nil)
            } catch {
                problems.append(ConfigurationProblem(flag: flag, key: key.rawValue, reason: error.reason))
            }
        }
        if problems.isEmpty { problems = result.crossCheck() }
        if !problems.isEmpty { throw ConfigurationError(problems) }
        return result
    }
}
