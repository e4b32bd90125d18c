import ArgumentParser
import BeacondCore

/// Options that override config keys take their names from the key table (`ConfigKey.flag`) and keep
/// the flag's text as a `ConfigFlag`.
///
/// ArgumentParser needs each option declared as a property; the table cannot declare them. So each
/// property names only its key: the flag name comes from the table, and the text is parsed by the key's
/// parser, with its range, in `DaemonOverrides.applied(to:)` (`run`, `scan`: every bad flag is reported
/// at once, exit 64) or by `ConfigFlag.check()` in the option's transform (`replay`). A test parses
/// `run` with every flag in the table, so a flag missing here is caught.
extension NameSpecification {
    /// `--min-rssi` for `.fusionMinRSSI`: the key's flag in the table.
    static func configKey(_ key: ConfigKey) -> NameSpecification {
        .customLong(String((key.flag ?? key.rawValue).drop { $0 == "-" }))
    }
}

extension ArgumentHelp {
    /// `help`, followed by the key the flag overrides: `Ignore overrides weaker than this, dBm (fusion.min_rssi).`
    static func configKey(_ key: ConfigKey, _ help: String, valueName: String? = nil) -> ArgumentHelp {
        ArgumentHelp("\(help) (\(key.rawValue)).", valueName: valueName)
    }
}

extension Option where Value == ConfigFlag? {
    /// A `run` or `scan` option for `key`: its raw text, checked when the overrides are applied.
    init(key: ConfigKey, parsing: SingleValueParsingStrategy = .next, help: String, valueName: String) {
        self.init(
            name: .configKey(key), parsing: parsing, help: .configKey(key, help, valueName: valueName),
            transform: { ConfigFlag(key, $0) })
    }
}

extension Flag where Value == Bool {
    /// A switch for a boolean key (`--loop`): given means `true`.
    init(wrappedValue: Bool, key: ConfigKey, help: String) {
        self.init(wrappedValue: wrappedValue, name: .configKey(key), help: .configKey(key, help))
    }
}

extension ConfigFlag {
    /// An option's transform for `key`, checked at once with the key's parser and range; ArgumentParser
    /// prints the reason after the flag and exits 64.
    static func checked(_ key: ConfigKey) -> @Sendable (String) throws -> ConfigFlag {
        { text in
            let flag = ConfigFlag(key, text)
            do throws(ConfigValueProblem) {
                try flag.check()
            } catch {
                throw FlagValueError(reason: error.reason)
            }
            return flag
        }
    }
}
