import CircuitState
import Logging

extension DaemonConfiguration {
    /// Sets `key` from an unchecked value. `base` resolves relative paths (a config file's directory).
    mutating func set(_ key: ConfigKey, to value: RawConfigValue, relativeTo base: String?)
        throws(ConfigValueProblem)
    {
        typealias P = ConfigValueParser
        let isNull: Bool
        if case .null = value.kind { isNull = true } else { isNull = false }
        switch key {
        case .scannerBackend: scanner.backend = try P.backend(value)
        case .scannerAdapter: scanner.adapter = try P.adapter(value)
        case .scannerCompanyID: scanner.companyID = try P.integer(value, in: 0...UInt16.max)
        case .scannerReplay: scanner.replay = isNull ? nil : try P.path(value, relativeTo: base)
        case .scannerSpeed: scanner.speed = try P.speed(value)
        case .scannerLoop: scanner.loop = try P.bool(value)
        case .scannerSilenceRestart: scanner.silenceRestart = try P.duration(value, in: .silenceRestart)
        case .scannerActive: scanner.active = try P.bool(value)
        case .scannerScanInterval: scanner.scanIntervalMs = try P.integer(value, in: Scanner.scanTimingRange)
        case .scannerScanWindow: scanner.scanWindowMs = try P.integer(value, in: Scanner.scanTimingRange)
        case .remoteURL: remote.url = isNull ? nil : try P.url(value)
        case .remotePollInterval: remote.pollInterval = try P.duration(value, in: .pollInterval)
        case .remoteTimeout: remote.timeout = try P.duration(value, in: .timeout)
        case .remoteStaleAfter: remote.staleAfter = try P.duration(value, in: .staleAfter)
        case .remoteCAFile: remote.caFile = isNull ? nil : try P.readableFile(value, relativeTo: base)
        case .remoteBearerTokenFile:
            remote.bearerTokenFile = isNull ? nil : try P.readableFile(value, relativeTo: base)
        case .fusionPolicy: fusion.policy = try P.policy(value)
        case .fusionMinRSSI: fusion.minRSSI = try P.integer(value, in: -127...20)
        case .fusionZones: fusion.zones = try P.zones(value)
        case .fusionMaxTTL: fusion.maxTTL = try P.duration(value, in: .maxTTL)
        case .fusionDeescalationHold: fusion.deescalationHold = try P.duration(value, in: .deescalationHold)
        case .fusionAllow: fusion.allow = try P.allowList(value)
        case .fusionMaxDistance: fusion.maxDistance = isNull ? nil : try P.metres(value)
        case .fusionReferencePower: fusion.referencePower = isNull ? nil : try P.referencePower(value)
        case .fusionMaxEntries: fusion.maxEntries = try P.integer(value, in: 1...1_000_000)
        case .socketPath:
            let path = try P.path(value, relativeTo: base)
            guard path.utf8.count <= Socket.maxPathBytes else {
                throw ConfigValueProblem(
                    "\(P.quoted(path)) is \(path.utf8.count) bytes long; a Unix socket path holds at most "
                        + "\(Socket.maxPathBytes)", at: value)
            }
            socket.path = path
        case .socketMaxClients: socket.maxClients = try P.integer(value, in: 1...1_000_000)
        case .stateDir: stateDir = try P.path(value, relativeTo: base)
        case .logLevel: log.level = try P.logLevel(value)
        case .recordPath: record.path = isNull ? nil : try P.path(value, relativeTo: base)
        case .recordMaxMB: record.maxMB = try P.integer(value, in: 1...1_000_000)
        case .recordKeep: record.keep = try P.integer(value, in: 0...1000)
        }
    }

    /// The value of `key` as the config file would spell it; `~` for none.
    func describe(_ key: ConfigKey) -> String {
        func seconds(_ micros: Int64) -> String { DecimalText.format(micros: micros) }
        func optional(_ text: String?) -> String { text ?? "~" }
        switch key {
        case .scannerBackend: return scanner.backend.rawValue
        case .scannerAdapter: return scanner.adapter
        case .scannerCompanyID: return "0x" + String(String(scanner.companyID, radix: 16, uppercase: true))
        case .scannerReplay: return optional(scanner.replay)
        case .scannerSpeed: return scanner.speed.description
        case .scannerLoop: return String(scanner.loop)
        case .scannerSilenceRestart: return seconds(scanner.silenceRestart)
        case .scannerActive: return String(scanner.active)
        case .scannerScanInterval: return String(scanner.scanIntervalMs)
        case .scannerScanWindow: return String(scanner.scanWindowMs)
        case .remoteURL: return optional(remote.url)
        case .remotePollInterval: return seconds(remote.pollInterval)
        case .remoteTimeout: return seconds(remote.timeout)
        case .remoteStaleAfter: return seconds(remote.staleAfter)
        case .remoteCAFile: return optional(remote.caFile)
        case .remoteBearerTokenFile: return optional(remote.bearerTokenFile)
        case .fusionPolicy: return fusion.policy.rawValue
        case .fusionMinRSSI: return String(fusion.minRSSI)
        case .fusionZones: return "[" + fusion.zones.sorted().map(String.init).joined(separator: ",") + "]"
        case .fusionMaxTTL: return seconds(fusion.maxTTL)
        case .fusionDeescalationHold: return seconds(fusion.deescalationHold)
        case .fusionReferencePower: return fusion.referencePower.map { String($0) } ?? "~"
        case .fusionAllow:
            let entries = fusion.allow.addresses.sorted().map(\.description)
                + fusion.allow.sourceIDs.sorted().map(String.init)
            return "[" + entries.joined(separator: ",") + "]"
        case .fusionMaxDistance: return fusion.maxDistance.map { String($0) } ?? "~"
        case .fusionMaxEntries: return String(fusion.maxEntries)
        case .socketPath: return socket.path
        case .socketMaxClients: return String(socket.maxClients)
        case .stateDir: return stateDir
        case .logLevel: return log.level.rawValue
        case .recordPath: return optional(record.path)
        case .recordMaxMB: return String(record.maxMB)
        case .recordKeep: return String(record.keep)
        }
    }

    /// Takes `key`'s value from `other`.
    mutating func copy(_ key: ConfigKey, from other: DaemonConfiguration) {
        switch key {
        case .scannerBackend: scanner.backend = other.scanner.backend
        case .scannerAdapter: scanner.adapter = other.scanner.adapter
        case .scannerCompanyID: scanner.companyID = other.scanner.companyID
        case .scannerReplay: scanner.replay = other.scanner.replay
        case .scannerSpeed: scanner.speed = other.scanner.speed
        case .scannerLoop: scanner.loop = other.scanner.loop
        case .scannerSilenceRestart: scanner.silenceRestart = other.scanner.silenceRestart
        case .scannerActive: scanner.active = other.scanner.active
        case .scannerScanInterval: scanner.scanIntervalMs = other.scanner.scanIntervalMs
        case .scannerScanWindow: scanner.scanWindowMs = other.scanner.scanWindowMs
        case .remoteURL: remote.url = other.remote.url
        case .remotePollInterval: remote.pollInterval = other.remote.pollInterval
        case .remoteTimeout: remote.timeout = other.remote.timeout
        case .remoteStaleAfter: remote.staleAfter = other.remote.staleAfter
        case .remoteCAFile: remote.caFile = other.remote.caFile
        case .remoteBearerTokenFile: remote.bearerTokenFile = other.remote.bearerTokenFile
        case .fusionPolicy: fusion.policy = other.fusion.policy
        case .fusionMinRSSI: fusion.minRSSI = other.fusion.minRSSI
        case .fusionZones: fusion.zones = other.fusion.zones
        case .fusionMaxTTL: fusion.maxTTL = other.fusion.maxTTL
        case .fusionDeescalationHold: fusion.deescalationHold = other.fusion.deescalationHold
        case .fusionReferencePower: fusion.referencePower = other.fusion.referencePower
        case .fusionAllow: fusion.allow = other.fusion.allow
        case .fusionMaxDistance: fusion.maxDistance = other.fusion.maxDistance
        case .fusionMaxEntries: fusion.maxEntries = other.fusion.maxEntries
        case .socketPath: socket.path = other.socket.path
        case .socketMaxClients: socket.maxClients = other.socket.maxClients
        case .stateDir: stateDir = other.stateDir
        case .logLevel: log.level = other.log.level
        case .recordPath: record.path = other.record.path
        case .recordMaxMB: record.maxMB = other.record.maxMB
        case .recordKeep: record.keep = other.record.keep
        }
    }

    /// Checks that need more than one key, once the file and the flags are both applied.
    func crossCheck() -> [ConfigurationProblem] {
        var problems: [ConfigurationProblem] = []
        if scanner.backend == .replay {
            if let replay = scanner.replay {
                do throws(ConfigValueProblem) {
                    try ConfigValueParser.checkReadable(replay, value: nil)
                } catch {
                    problems.append(origins.problem(.scannerReplay, reason: error.reason))
                }
            } else {
                var problem = origins.problem(
                    .scannerBackend, reason: "scanner.replay (--replay) is required when scanner.backend is replay")
                problem.key = ConfigKey.scannerReplay.rawValue
                problems.append(problem)
            }
        }
        if scanner.scanWindowMs > scanner.scanIntervalMs {
            problems.append(origins.problem(
                .scannerScanWindow,
                reason: "the scan window (\(scanner.scanWindowMs) ms) is longer than the scan interval "
                    + "(\(scanner.scanIntervalMs) ms, scanner.scan_interval_ms)"))
        }
        return problems
    }

    /// Throws every cross-key problem.
    func validate() throws(ConfigurationError) {
        let problems = crossCheck()
        if !problems.isEmpty { throw ConfigurationError(problems) }
    }
}
