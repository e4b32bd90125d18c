import BeacondClient

extension ConfigValueParser {
    /// `kiosk.languages`: one to `KioskSettings.maxLanguages` language codes (`[es, en]`, or `es, en`),
    /// each named once.
    static func languages(_ value: RawConfigValue) throws(ConfigValueProblem) -> [String] {
        let entries = try entries(value)
        guard !entries.isEmpty else { throw ConfigValueProblem("name at least one language, like [es, en]", at: value) }
        guard entries.count <= KioskSettings.maxLanguages else {
            throw ConfigValueProblem(
                "\(entries.count) languages; at most \(KioskSettings.maxLanguages) are cycled through", at: value)
        }
        var codes: [String] = []
        for (index, entry) in entries.enumerated() {
            guard KioskCatalogue.isLanguageCode(entry.text) else {
                throw ConfigValueProblem(
                    "entry \(index + 1): \(quoted(entry.text)) is not a language code like es, ca, en or pt-BR",
                    at: entry.value)
            }
            guard !codes.contains(entry.text) else {
                throw ConfigValueProblem("entry \(index + 1): \(quoted(entry.text)) is listed twice", at: entry.value)
            }
            codes.append(entry.text)
        }
        return codes
    }

    /// `kiosk.exit.direction`: one of GeoRacing's eight `arrow_direction` values.
    static func exitDirection(_ value: RawConfigValue) throws(ConfigValueProblem) -> BlockArrow.Direction {
        let text = try scalar(value, expected: "a direction")
        guard let direction = BlockArrow.Direction(rawValue: text) else {
            let names = BlockArrow.Direction.allCases.map(\.rawValue).joined(separator: ", ")
            throw ConfigValueProblem("expected one of \(names), found \(quoted(text))", at: value)
        }
        return direction
    }

    /// `kiosk.exit.name`: text a screen shows as it is, at most `KioskExit.maxNameLength` characters.
    static func exitName(_ value: RawConfigValue) throws(ConfigValueProblem) -> String {
        let text = try string(value, expected: "the exit's name")
        guard text.count <= KioskExit.maxNameLength else {
            throw ConfigValueProblem(
                "\(text.count) characters long; at most \(KioskExit.maxNameLength) fit on a screen", at: value)
        }
        guard KioskText.stripped(text, limit: KioskExit.maxNameLength) == text else {
            throw ConfigValueProblem("\(quoted(text)) holds characters a kiosk does not show", at: value)
        }
        return text
    }
}

extension ConfigValueParser {
    /// `kiosk.audio_device`: an ALSA device name (`default`, `hw:1,0`, `plughw:CARD=USB,DEV=0`),
    /// printable ASCII without spaces, at most 80 characters.
    static func audioDevice(_ value: RawConfigValue) throws(ConfigValueProblem) -> String {
        let text = try string(value, expected: "an ALSA device name")
        guard text.utf8.count <= 80, text.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw ConfigValueProblem(
                "\(quoted(text)) is not an ALSA device name like default, hw:1,0 or plughw:CARD=USB,DEV=0", at: value)
        }
        return text
    }
}

extension KioskSettings {
    /// The `kiosk.*` keys of the config file at `path`; the daemon's keys are accepted by name and
    /// not checked (a kiosk may not read the daemon's key files). Unknown keys are errors, as for
    /// the daemon.
    package static func load(path: String) throws(ConfigurationError) -> KioskSettings {
        try DaemonConfiguration.parseIdentified(path: path, reader: .kiosk).configuration.kiosk
    }
}
