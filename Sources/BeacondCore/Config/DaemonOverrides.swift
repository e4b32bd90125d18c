/// One command-line flag's text for a config key: `--min-rssi -80` is (`fusion.min_rssi`, `-80`).
package struct ConfigFlag: Hashable, Sendable {
    package var key: ConfigKey
    package var text: String

    package init(_ key: ConfigKey, _ text: String) {
        self.key = key
        self.text = text
    }

    /// A switch flag (`--loop`): `true` when it was given, nil (the file stands) when it was not.
    package static func switched(_ key: ConfigKey, _ given: Bool) -> ConfigFlag? {
        given ? ConfigFlag(key, "true") : nil
    }

    /// The key's default value as flag text, which its parser takes back: `-90`, `15`, `0x1234`.
    package static func defaultValue(_ key: ConfigKey) -> ConfigFlag {
        ConfigFlag(key, DaemonConfiguration().describe(key))
    }

    /// Checks the text with the key's parser and range, the same check `DaemonOverrides.applied(to:)` makes.
    package func check() throws(ConfigValueProblem) {
        var scratch = DaemonConfiguration()
        try scratch.set(key, to: .flag(text), relativeTo: nil)
    }
}

/// The `beacond run` flags that override config file keys. A key without a flag: the file (or the default) stands.
///
/// Values are the flags' text, checked by the same rules as the file, so `--stale-after 2.5` and
/// `remote.stale_after: 2.5` mean the same and fail the same way.
package struct DaemonOverrides: Hashable, Sendable {
    /// Each given flag's text, by the key it overrides.
    private var texts: [ConfigKey: String] = [:]

    /// No flags: the file (or the defaults) as it is.
    package init() {}

    /// The flags given; nil entries were not. A later flag for the same key wins.
    package init(_ flags: [ConfigFlag?]) {
        for case let flag? in flags { texts[flag.key] = flag.text }
    }

    package subscript(key: ConfigKey) -> String? {
        get { texts[key] }
        set { texts[key] = newValue }
    }

    /// The given flags, as (key, text), in key order.
    var values: [(key: ConfigKey, text: String)] {
        texts.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// `configuration` with these flags on top, then checked as a whole. Every bad flag is reported,
    /// naming the flag and its key. Relative paths stay relative to the working directory.
    package func applied(to configuration: DaemonConfiguration) throws(ConfigurationError) -> DaemonConfiguration {
        var result = configuration
        var problems: [ConfigurationProblem] = []
        for (key, text) in values {
            let flag = key.flag ?? key.rawValue
            result.origins[key] = .flag(flag)
            do throws(ConfigValueProblem) {
                try result.set(key, to: .flag(text), relativeTo: nil)
            } catch {
                problems.append(ConfigurationProblem(flag: flag, key: error.keyPath(key), reason: error.reason))
            }
        }
        if problems.isEmpty { problems = result.crossCheck() }
        if !problems.isEmpty { throw ConfigurationError(problems) }
        return result
    }
}
