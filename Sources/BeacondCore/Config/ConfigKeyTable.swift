import CircuitState
import Logging

/// What a SIGHUP reload does with a changed key.
enum ReloadClass: Hashable, Sendable {
    /// Logged as needing a restart; the running value stays.
    case restart
    /// A `kiosk.*` key: the daemon ignores it; a kiosk reads it when it starts.
    case kiosk
    /// Applied to the running daemon, by the parts it feeds.
    case live(ReloadEffect)
}

/// The parts of the running daemon a live key feeds.
struct ReloadEffect: OptionSet, Hashable, Sendable {
    let rawValue: UInt8
    /// The fusion engine, rebuilt from `DaemonConfiguration.fusionConfiguration()`.
    static let fusion = ReloadEffect(rawValue: 1)
    /// The remote poller, given the new URL, interval, timeout, CA or token file.
    static let remote = ReloadEffect(rawValue: 2)
    /// The log level.
    static let logging = ReloadEffect(rawValue: 4)
    /// The hub's zone names, republished when the shown zone's name changed.
    static let zoneNames = ReloadEffect(rawValue: 8)
    /// The v3 verifier: the key file (read again on every reload, changed or not) and clock window.
    static let security = ReloadEffect(rawValue: 16)
}

/// One row of the key table, with the type of its value erased: where the key lives in
/// `DaemonConfiguration`, how its value is parsed (with its range) and written back, what a reload
/// does with it, and the `beacond run` flag that overrides it.
///
/// `set`, `describe` and `copy` are built here from the key path, so a key cannot be parsed into one
/// field and described or copied from another.
struct ConfigKeySpec {
    /// `--min-rssi`; nil: the key has no flag.
    let flag: String?
    let reload: ReloadClass
    /// Relative paths in a config file are resolved against its directory.
    let isPath: Bool
    /// The range of a duration key; nil for other keys.
    let durationRange: DurationRange?
    /// A boolean key: its flag takes no value (`--loop` means `true`).
    let isSwitch: Bool
    let set: (inout DaemonConfiguration, RawConfigValue, _ base: String?) throws(ConfigValueProblem) -> Void
    let describe: (DaemonConfiguration) -> String
    let copy: (inout DaemonConfiguration, DaemonConfiguration) -> Void

    init<Value>(
        _ path: WritableKeyPath<DaemonConfiguration, Value>, flag: String? = nil, reload: ReloadClass,
        isPath: Bool = false, durationRange: DurationRange? = nil,
        parse: @escaping (RawConfigValue, _ base: String?) throws(ConfigValueProblem) -> Value,
        format: @escaping (Value) -> String
    ) {
        self.flag = flag
        self.reload = reload
        self.isPath = isPath
        self.durationRange = durationRange
        self.isSwitch = Value.self == Bool.self
        self.set = { configuration, value, base throws(ConfigValueProblem) in
            configuration[keyPath: path] = try parse(value, base)
        }
        self.describe = { configuration in format(configuration[keyPath: path]) }
        self.copy = { configuration, other in configuration[keyPath: path] = other[keyPath: path] }
    }

    /// A key whose value needs no base directory.
    init<Value>(
        _ path: WritableKeyPath<DaemonConfiguration, Value>, flag: String? = nil, reload: ReloadClass,
        parse: @escaping (RawConfigValue) throws(ConfigValueProblem) -> Value, format: @escaping (Value) -> String
    ) {
        self.init(
            path, flag: flag, reload: reload,
            parse: { value, _ throws(ConfigValueProblem) in
                try parse(value)
            }, format: format)
    }

    /// A duration key: seconds in the file and on the command line, microseconds in the configuration.
    init(
        _ path: WritableKeyPath<DaemonConfiguration, Int64>, flag: String? = nil, reload: ReloadClass,
        duration range: DurationRange
    ) {
        self.init(
            path, flag: flag, reload: reload, durationRange: range,
            parse: { value, _ throws(ConfigValueProblem) in try ConfigValueParser.duration(value, in: range) },
            format: DecimalText.format(micros:))
    }

    /// An integer key within `range`.
    init<Value: FixedWidthInteger & Sendable>(
        _ path: WritableKeyPath<DaemonConfiguration, Value>, flag: String? = nil, reload: ReloadClass,
        integer range: ClosedRange<Value>, format: @escaping (Value) -> String = { String($0) }
    ) {
        self.init(
            path, flag: flag, reload: reload,
            parse: { value throws(ConfigValueProblem) in
                try ConfigValueParser.integer(value, in: range)
            }, format: format)
    }

    /// A path key: relative to the config file's directory, relative flags to the working directory.
    init(
        _ path: WritableKeyPath<DaemonConfiguration, String>, flag: String? = nil, reload: ReloadClass,
        path parse: @escaping (RawConfigValue, _ base: String?) throws(ConfigValueProblem) -> String
    ) {
        self.init(path, flag: flag, reload: reload, isPath: true, parse: parse, format: { $0 })
    }

    /// An optional path key: `~` (or nothing) in the file unsets it.
    init(
        _ path: WritableKeyPath<DaemonConfiguration, String?>, flag: String? = nil, reload: ReloadClass,
        path parse: @escaping (RawConfigValue, _ base: String?) throws(ConfigValueProblem) -> String
    ) {
        self.init(path, flag: flag, reload: reload, isPath: true, parse: Self.orNone(parse), format: { $0 ?? "~" })
    }

    /// `parse`, except that a null value (`~`, nothing) is none. Flags are never null.
    static func orNone<Value>(_ parse: @escaping (RawConfigValue, _ base: String?) throws(ConfigValueProblem) -> Value)
        -> (RawConfigValue, _ base: String?) throws(ConfigValueProblem) -> Value?
    {
        { value, base throws(ConfigValueProblem) in
            if case .null = value.kind { return nil }
            return try parse(value, base)
        }
    }
}

extension ConfigKey {
    /// The key table: every key's row, declared once. Everything else about a key derives from it.
    var spec: ConfigKeySpec {
        typealias P = ConfigValueParser
        typealias Row = ConfigKeySpec
        let fusion = ReloadClass.live(.fusion)
        let remote = ReloadClass.live(.remote)
        switch self {
        case .scannerBackend:
            return Row(\.scanner.backend, flag: "--backend", reload: .restart, parse: P.backend, format: \.rawValue)
        case .scannerAdapter:
            return Row(
                \.scanner.adapters, flag: "--adapter", reload: .restart, parse: P.adapters, format: \.description)
        case .scannerCompanyID:
            return Row(
                \.scanner.companyID, flag: "--company-id", reload: .restart, integer: 0...UInt16.max,
                format: { "0x" + String($0, radix: 16, uppercase: true) })
        case .scannerReplay: return Row(\.scanner.replay, flag: "--replay", reload: .restart, path: P.path)
        case .scannerSpeed:
            return Row(\.scanner.speed, flag: "--speed", reload: .restart, parse: P.speed, format: \.description)
        case .scannerLoop:
            return Row(\.scanner.loop, flag: "--loop", reload: .restart, parse: P.bool, format: { String($0) })
        case .scannerSilenceRestart: return Row(\.scanner.silenceRestart, reload: .restart, duration: .silenceRestart)
        case .scannerActive:
            return Row(\.scanner.active, flag: "--active", reload: .restart, parse: P.bool, format: { String($0) })
        case .scannerKernelFilter:
            return Row(\.scanner.kernelFilter, reload: .restart, parse: P.bool, format: { String($0) })
        case .scannerScanInterval:
            return Row(
                \.scanner.scanIntervalMs, flag: "--scan-interval-ms", reload: .restart,
                integer: DaemonConfiguration.Scanner.scanTimingRange)
        case .scannerScanWindow:
            return Row(
                \.scanner.scanWindowMs, flag: "--scan-window-ms", reload: .restart,
                integer: DaemonConfiguration.Scanner.scanTimingRange)
        case .scannerBlueZRefresh: return Row(\.scanner.blueZRefresh, reload: .restart, duration: .blueZRefresh)
        case .remoteURL:
            return Row(
                \.remote.url, flag: "--remote-url", reload: remote,
                parse: Row.orNone { value, _ throws(ConfigValueProblem) in try P.url(value) },
                format: { $0 ?? "~" })
        case .remotePollInterval:
            return Row(\.remote.pollInterval, flag: "--poll-interval", reload: remote, duration: .pollInterval)
        case .remoteTimeout: return Row(\.remote.timeout, flag: "--timeout", reload: remote, duration: .timeout)
        case .remoteStaleAfter:
            // Staleness is the fusion engine's: the poller keeps running as it is.
            return Row(\.remote.staleAfter, flag: "--stale-after", reload: fusion, duration: .staleAfter)
        case .remoteCAFile: return Row(\.remote.caFile, reload: remote, path: P.readableFile)
        case .remoteBearerTokenFile: return Row(\.remote.bearerTokenFile, reload: remote, path: P.readableFile)
        case .fusionPolicy:
            return Row(\.fusion.policy, flag: "--policy", reload: fusion, parse: P.policy, format: \.rawValue)
        case .fusionMinRSSI: return Row(\.fusion.minRSSI, flag: "--min-rssi", reload: fusion, integer: -127...20)
        case .fusionZones:
            return Row(
                \.fusion.zones, flag: "--zones", reload: fusion, parse: P.zones,
                format: {
                    "[" + $0.sorted().map(String.init).joined(separator: ",") + "]"
                })
        case .fusionMaxTTL: return Row(\.fusion.maxTTL, reload: fusion, duration: .maxTTL)
        case .fusionDeescalationHold:
            return Row(
                \.fusion.deescalationHold, flag: "--deescalation-hold", reload: fusion,
                duration: .deescalationHold)
        case .fusionAllow:
            return Row(
                \.fusion.allow, reload: fusion, parse: P.allowList,
                format: { allow in
                    let entries =
                        allow.addresses.sorted().map(\.description) + allow.sourceIDs.sorted().map(String.init)
                    return "[" + entries.joined(separator: ",") + "]"
                })
        case .fusionMaxDistance:
            return Row(
                \.fusion.maxDistance, reload: fusion,
                parse: Row.orNone { value, _ throws(ConfigValueProblem) in try P.metres(value) },
                format: { $0.map { String($0) } ?? "~" })
        case .fusionReferencePower:
            return Row(
                \.fusion.referencePower, reload: fusion,
                parse: Row.orNone { value, _ throws(ConfigValueProblem) in try P.referencePower(value) },
                format: { $0.map { String($0) } ?? "~" })
        case .fusionMaxEntries: return Row(\.fusion.maxEntries, reload: .restart, integer: 1...1_000_000)
        case .fusionCommandFrames:
            return Row(\.fusion.commandFrames, reload: fusion, parse: P.commandFrames, format: \.rawValue)
        case .socketPath: return Row(\.socket.path, flag: "--socket", reload: .restart, path: P.socketPath)
        case .socketMaxClients: return Row(\.socket.maxClients, reload: .restart, integer: 1...1_000_000)
        case .stateDir: return Row(\.stateDir, flag: "--state-dir", reload: .restart, path: P.path)
        case .logLevel:
            return Row(
                \.log.level, flag: "--log-level", reload: .live(.logging), parse: P.logLevel,
                format: \.rawValue)
        case .recordPath: return Row(\.record.path, flag: "--record", reload: .restart, path: P.path)
        case .recordMaxMB: return Row(\.record.maxMB, flag: "--record-max-mb", reload: .restart, integer: 1...1_000_000)
        case .recordKeep: return Row(\.record.keep, flag: "--record-keep", reload: .restart, integer: 0...1000)
        case .zonesNames:
            // No flag: a mapping is awkward on a command line (the parser still reads `describe`'s text).
            return Row(\.zones.names, reload: .live(.zoneNames), parse: P.zoneNames, format: \.description)
        case .metricsListen:
            return Row(
                \.metrics.listen, flag: "--metrics", reload: .restart,
                parse: Row.orNone { value, _ throws(ConfigValueProblem) in try P.listenAddress(value) },
                format: { $0.map(\.description) ?? "~" })
        case .mqttURL:
            return Row(
                \.mqtt.url, flag: "--mqtt-url", reload: .restart,
                parse: Row.orNone { value, _ throws(ConfigValueProblem) in try P.mqttURL(value) },
                format: { $0 ?? "~" })
        case .mqttNode:
            return Row(
                \.mqtt.node, flag: "--mqtt-node", reload: .restart,
                parse: Row.orNone { value, _ throws(ConfigValueProblem) in try P.mqttNode(value) },
                format: { $0 ?? "~" })
        case .mqttClientID:
            return Row(
                \.mqtt.clientID, reload: .restart,
                parse: Row.orNone { value, _ throws(ConfigValueProblem) in try P.mqttText(value) },
                format: { $0 ?? "~" })
        case .mqttUsername:
            return Row(
                \.mqtt.username, reload: .restart,
                parse: Row.orNone { value, _ throws(ConfigValueProblem) in try P.mqttText(value) },
                format: { $0 ?? "~" })
        case .mqttPasswordFile: return Row(\.mqtt.passwordFile, reload: .restart, path: P.readableFile)
        case .mqttCAFile: return Row(\.mqtt.caFile, reload: .restart, path: P.readableFile)
        case .mqttTopicPrefix:
            return Row(\.mqtt.topicPrefix, reload: .restart, parse: P.mqttTopicPrefix, format: { $0 })
        case .mqttQoSState: return Row(\.mqtt.qosState, reload: .restart, integer: 0...2)
        case .beaconZone:
            return Row(
                \.beacon.zone, reload: .restart,
                parse: Row.orNone { value, _ throws(ConfigValueProblem) in try P.integer(value, in: 0...UInt16.max) },
                format: { $0.map(String.init) ?? "~" })
        case .beaconBackend:
            return Row(\.beacon.backend, reload: .restart, parse: P.beaconBackend, format: \.rawValue)
        case .beaconFrameVersion:
            return Row(\.beacon.frameVersion, reload: .restart, parse: P.beaconFrameVersion, format: \.rawValue)
        case .beaconSourceID:
            return Row(
                \.beacon.sourceID, reload: .restart,
                parse: Row.orNone { value, _ throws(ConfigValueProblem) in try P.integer(value, in: 0...UInt16.max) },
                format: { $0.map(String.init) ?? "~" })
        case .beaconAdapter: return Row(\.beacon.adapter, reload: .restart, parse: P.adapter, format: { $0 })
        case .beaconInterval: return Row(\.beacon.interval, reload: .restart, duration: .beaconInterval)
        case .beaconHeartbeatURL:
            return Row(
                \.beacon.heartbeatURL, reload: .restart,
                parse: Row.orNone { value, _ throws(ConfigValueProblem) in try P.url(value) },
                format: { $0 ?? "~" })
        case .beaconHeartbeatCAFile: return Row(\.beacon.heartbeatCAFile, reload: .restart, path: P.readableFile)
        case .beaconUID:
            return Row(
                \.beacon.uid, reload: .restart,
                parse: Row.orNone { value, _ throws(ConfigValueProblem) in try P.beaconUID(value) },
                format: { $0 ?? "~" })
        case .securityKeyFile:
            return Row(\.security.keyFile, flag: "--key-file", reload: .live(.security), path: P.path)
        case .securityUnsigned:
            return Row(
                \.security.unsigned, flag: "--unsigned", reload: fusion, parse: P.unsignedFrames, format: \.rawValue)
        case .securityClockWindow:
            return Row(
                \.security.clockWindow, flag: "--clock-window", reload: .live(.security), duration: .clockWindow)
        case .kioskLanguages:
            return Row(
                \.kiosk.languages, reload: .kiosk, parse: P.languages, format: { "[" + $0.joined(separator: ",") + "]" }
            )
        case .kioskLanguagePeriod: return Row(\.kiosk.languagePeriod, reload: .kiosk, duration: .languagePeriod)
        case .kioskLanguageDir: return Row(\.kiosk.languageDir, reload: .kiosk, path: P.path)
        case .kioskExitDirection:
            return Row(
                \.kiosk.exit.direction, reload: .kiosk,
                parse: Row.orNone { value, _ throws(ConfigValueProblem) in try P.exitDirection(value) },
                format: { $0?.rawValue ?? "~" })
        case .kioskExitName:
            return Row(
                \.kiosk.exit.name, reload: .kiosk,
                parse: Row.orNone { value, _ throws(ConfigValueProblem) in try P.exitName(value) },
                format: { $0 ?? "~" })
        case .kioskExitDistance:
            return Row(
                \.kiosk.exit.distanceMetres, reload: .kiosk,
                parse: Row.orNone { value, _ throws(ConfigValueProblem) in
                    try P.integer(value, in: 0...KioskExit.maxDistanceMetres)
                }, format: { $0.map(String.init) ?? "~" })
        case .kioskSpeak: return Row(\.kiosk.speak, reload: .kiosk, parse: P.bool, format: { String($0) })
        case .kioskSpeakRepeat: return Row(\.kiosk.speakRepeat, reload: .kiosk, duration: .speakRepeat)
        case .kioskAudioDevice:
            return Row(
                \.kiosk.audioDevice, reload: .kiosk,
                parse: Row.orNone { value, _ throws(ConfigValueProblem) in try P.audioDevice(value) },
                format: { $0 ?? "~" })
        }
    }

    /// The `beacond run` flag that overrides this key, if any.
    package var flag: String? { spec.flag }

    /// Whether a SIGHUP reload applies a change of this key to the running daemon.
    /// Other changes are logged as needing a restart, and the running value stays.
    var isLiveReloadable: Bool { spec.reload != .restart && spec.reload != .kiosk }

    /// The parts of the running daemon a reload feeds this key to; empty for restart-only keys.
    var reloadEffect: ReloadEffect {
        if case .live(let effect) = spec.reload { return effect }
        return []
    }

    /// Keys whose values are paths: relative ones in a config file are resolved against its directory.
    var isPath: Bool { spec.isPath }

    /// The range of a duration key; nil for keys that are not durations.
    var durationRange: DurationRange? { spec.durationRange }

    /// A boolean key: its flag takes no value.
    package var flagIsSwitch: Bool { spec.isSwitch }
}

extension ConfigValueParser {
    /// `socket.path`: a path that fits in `sun_path`.
    static func socketPath(_ value: RawConfigValue, relativeTo base: String?) throws(ConfigValueProblem) -> String {
        let path = try path(value, relativeTo: base)
        guard path.utf8.count <= DaemonConfiguration.Socket.maxPathBytes else {
            throw ConfigValueProblem(
                "\(quoted(path)) is \(path.utf8.count) bytes long; a Unix socket path holds at most "
                    + "\(DaemonConfiguration.Socket.maxPathBytes)", at: value)
        }
        return path
    }
}

extension DaemonConfiguration {
    /// Sets `key` from an unchecked value. `base` resolves relative paths (a config file's directory).
    mutating func set(_ key: ConfigKey, to value: RawConfigValue, relativeTo base: String?)
        throws(ConfigValueProblem)
    {
        try key.spec.set(&self, value, base)
    }

    /// The value of `key` as the config file would spell it; `~` for none.
    func describe(_ key: ConfigKey) -> String { key.spec.describe(self) }

    /// Takes `key`'s value from `other`.
    mutating func copy(_ key: ConfigKey, from other: DaemonConfiguration) { key.spec.copy(&self, other) }
}
