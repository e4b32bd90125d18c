/// What a SIGHUP reload changes: which changes apply now, and which wait for a restart.
struct ReloadPlan: Sendable {
    struct Change: Hashable, Sendable, CustomStringConvertible {
        var key: ConfigKey
        var old: String
        var new: String
        /// Shown instead of `old -> new` when the values are long (`zones.names`: what changed).
        var detail: String?

        /// `fusion.policy: safety -> most-severe`
        var description: String {
            if let detail { return "\(key.rawValue): \(detail)" }
            return
                "\(key.rawValue): \(ConfigValueParser.quotedIfNeeded(old)) -> \(ConfigValueParser.quotedIfNeeded(new))"
        }
    }

    /// Changes to live-reloadable keys, in key order: these are in `configuration`.
    var applied: [Change]
    /// Changes that need a restart, in key order: `configuration` keeps the running values.
    var needsRestart: [Change]
    /// What the daemon runs with from now on: the new live values, the running values of the rest.
    var configuration: DaemonConfiguration
    /// The file just read and its digest (nil without a config file): set by `reload`.
    var file: ConfigFileIdentity?

    /// Nothing changed at all.
    var isEmpty: Bool { applied.isEmpty && needsRestart.isEmpty }

    /// Whether `key` changed and is applied now.
    func applies(_ key: ConfigKey) -> Bool { applied.contains { $0.key == key } }

    /// The fusion engine needs `configuration.fusionConfiguration()`.
    var fusionChanged: Bool {
        applied.contains { $0.key.reloadEffect.contains(.fusion) }
    }

    /// The remote poller needs the new URL, interval, timeout, CA or token file.
    var remoteChanged: Bool {
        applied.contains { $0.key.reloadEffect.contains(.remote) }
    }

    var logLevelChanged: Bool { applies(.logLevel) }

    /// The verifier needs its clock window or another key file (the key file is read again anyway).
    var securityChanged: Bool {
        applied.contains { $0.key.reloadEffect.contains(.security) }
    }

    /// The hub needs `configuration.zones.names`.
    var zoneNamesChanged: Bool {
        applied.contains { $0.key.reloadEffect.contains(.zoneNames) }
    }

    /// One line for the log, or nil when nothing changed:
    /// `config reloaded: fusion.policy: safety -> most-severe; needs restart: socket.path: "/a" -> "/b"`.
    var summary: String? {
        guard !isEmpty else { return nil }
        var parts: [String] = []
        if !applied.isEmpty { parts.append("applied " + applied.map(\.description).joined(separator: ", ")) }
        if !needsRestart.isEmpty {
            parts.append(
                "needs restart (running values kept) "
                    + needsRestart.map(\.description).joined(separator: ", "))
        }
        return parts.joined(separator: "; ")
    }
}

extension DaemonConfiguration {
    /// Compares this newly loaded configuration with the running one, `old`.
    func reloadPlan(from old: DaemonConfiguration) -> ReloadPlan {
        var applied: [ReloadPlan.Change] = []
        var needsRestart: [ReloadPlan.Change] = []
        var effective = self
        for key in ConfigKey.allCases {
            let before = old.describe(key)
            let after = describe(key)
            guard before != after else { continue }
            var change = ReloadPlan.Change(key: key, old: before, new: after)
            if key == .zonesNames { change.detail = zones.names.changes(from: old.zones.names) }
            if key.isLiveReloadable {
                applied.append(change)
            } else {
                needsRestart.append(change)
                effective.copy(key, from: old)
                effective.origins[key] = old.origins[key]
            }
        }
        return ReloadPlan(applied: applied, needsRestart: needsRestart, configuration: effective, file: nil)
    }

    /// Loads the file again with the same flags on top and compares it with `current`.
    /// Throws when the file is now invalid: the caller keeps `current` and logs the error.
    static func reload(path: String?, overrides: DaemonOverrides, current: DaemonConfiguration)
        throws(ConfigurationError) -> ReloadPlan
    {
        let loaded = try loadIdentified(path: path, overrides: overrides)
        var plan = loaded.configuration.reloadPlan(from: current)
        plan.file = loaded.file
        return plan
    }
}

extension ConfigValueParser {
    /// Text shown bare when it is a simple token, quoted and escaped otherwise.
    static func quotedIfNeeded(_ text: String) -> String {
        let plain =
            !text.isEmpty
            && text.unicodeScalars.allSatisfy {
                $0.value > 0x20 && $0.value < 0x7F && $0 != "\"" && $0 != "\\"
            }
        return plain ? text : quoted(text)
    }

    /// A value in a message: bare when it is a short simple token (`-300`, `0x10000`), otherwise
    /// quoted, escaped and shortened.
    static func shown(_ text: String) -> String {
        text.count <= maxQuotedLength ? quotedIfNeeded(text) : quoted(text)
    }
}
