import Yams

/// `zones.names`: the display name of each named zone, configured once in the daemon and sent to
/// every client (`zone_name` in `state` and in the beacon shape), so every kiosk names a zone alike.
///
/// A presentation concern: the fusion engine never sees it. Names are checked when the file is
/// read: 1–64 characters (at most 256 UTF-8 bytes) after trimming surrounding spaces, with no
/// control characters (C0, DEL, C1), bidi controls or line separators (`TerminalText.needsEscape`).
package struct ZoneNames: Hashable, Sendable {
    static let maxEntries = 1024
    static let maxCharacters = 64
    /// Bounds a name made of long combining sequences, which count as few characters.
    static let maxBytes = 256

    /// The names, by zone number; every one passed `ZoneNames.checkedName`.
    package private(set) var byZone: [UInt16: String]

    /// No names: `zone_name` is null everywhere.
    package init() { byZone = [:] }

    /// Names already checked (or written by a test); the parser is `ConfigValueParser.zoneNames`.
    init(_ byZone: [UInt16: String]) { self.byZone = byZone }

    /// The name of `zone`; nil for no zone or an unnamed one.
    package subscript(zone: UInt16?) -> String? { zone.flatMap { byZone[$0] } }

    /// The name of a zone given as an `Int` (the protocol's type); nil outside 0...65535.
    package subscript(zone zone: Int?) -> String? { zone.flatMap(UInt16.init(exactly:)).flatMap { byZone[$0] } }

    var count: Int { byZone.count }

    /// `name` trimmed of surrounding spaces, or why it cannot be a zone's name.
    static func checkedName(_ name: String) -> Result<String, NameProblem> {
        let trimmed = name.trimmingSpaces()
        if trimmed.isEmpty { return .failure(.empty) }
        if trimmed.unicodeScalars.contains(where: TerminalText.needsEscape) { return .failure(.control) }
        if trimmed.count > maxCharacters { return .failure(.tooLong(characters: trimmed.count)) }
        if trimmed.utf8.count > maxBytes { return .failure(.tooManyBytes(trimmed.utf8.count)) }
        return .success(trimmed)
    }

    enum NameProblem: Error, Equatable {
        case empty
        case control
        case tooLong(characters: Int)
        case tooManyBytes(Int)

        func reason(_ name: String) -> String {
            switch self {
            case .empty: "the name must not be empty"
            case .control:
                "the name \(ConfigValueParser.quoted(name)) contains a control character (or a bidi control or "
                    + "line separator)"
            case .tooLong(let characters):
                "the name \(ConfigValueParser.quoted(name)) is \(characters) characters long; "
                    + "at most \(ZoneNames.maxCharacters)"
            case .tooManyBytes(let bytes):
                "the name \(ConfigValueParser.quoted(name)) is \(bytes) bytes of UTF-8; "
                    + "at most \(ZoneNames.maxBytes)"
            }
        }
    }

    // MARK: Written back

    /// As the config file would spell it, a YAML flow mapping in zone order: `{3: "Main grandstand"}`;
    /// `{}` for none. The parser reads it back (as flag text) to the same names.
    var description: String {
        let entries = byZone.sorted { $0.key < $1.key }.map { "\($0.key): \(Self.yamlQuoted($0.value))" }
        return "{" + entries.joined(separator: ", ") + "}"
    }

    /// A YAML double-quoted scalar that reads back as `text`: `\` and `"` escaped, and every scalar
    /// outside YAML's printable set (or one libyaml breaks lines on) as `\u`/`\U`.
    static func yamlQuoted(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x22: result += "\\\""
            case 0x5C: result += "\\\\"
            case 0x20...0x7E, 0xA0...0x2027, 0x202A...0xD7FF, 0xE000...0xFEFE, 0xFF00...0xFFFD, 0x10000...0x10FFFF:
                result.unicodeScalars.append(scalar)
            default:
                let hex = String(scalar.value, radix: 16, uppercase: true)
                let (prefix, width) = scalar.value > 0xFFFF ? ("\\U", 8) : ("\\u", 4)
                result += prefix + String(repeating: "0", count: max(0, width - hex.count)) + hex
            }
        }
        return result + "\""
    }

    /// What a reload changed, for its log line, at most `limit` zones listed:
    /// `zone 3 "Stand" -> "Main grandstand", zone 12 added "Pit lane", zone 7 removed`.
    func changes(from old: ZoneNames, limit: Int = 8) -> String {
        let zones = Set(old.byZone.keys).union(byZone.keys).sorted()
        var parts: [String] = []
        var more = 0
        for zone in zones {
            let before = old.byZone[zone]
            let after = byZone[zone]
            guard before != after else { continue }
            guard parts.count < limit else {
                more += 1
                continue
            }
            switch (before, after) {
            case (let before?, let after?):
                parts.append("zone \(zone) \(ConfigValueParser.quoted(before)) -> \(ConfigValueParser.quoted(after))")
            case (nil, let after?): parts.append("zone \(zone) added \(ConfigValueParser.quoted(after))")
            case (_?, nil): parts.append("zone \(zone) removed")
            case (nil, nil): break
            }
        }
        if more > 0 { parts.append("\(more) more") }
        return parts.joined(separator: ", ")
    }
}

extension ConfigValueParser {
    /// `zones.names`: a mapping from zone number (0–65535, decimal or 0x) to name. A flag's text (no
    /// position) is read as a YAML flow mapping, which is how `describe` writes the key.
    static func zoneNames(_ value: RawConfigValue) throws(ConfigValueProblem) -> ZoneNames {
        let expected = "a mapping of zone numbers to names (like `3: \"Main grandstand\"`)"
        switch value.kind {
        case .null: return ZoneNames()
        case .sequence: throw ConfigValueProblem("expected \(expected), found a list", at: value)
        case .scalar(let text):
            guard value.line == nil else {
                throw ConfigValueProblem("expected \(expected), found \(quoted(text))", at: value)
            }
            return try zoneNames(flagText: text, expected: expected)
        case .mapping(let entries):
            guard entries.count <= ZoneNames.maxEntries else {
                throw ConfigValueProblem(
                    "\(entries.count) zones are named; at most \(ZoneNames.maxEntries) may be", at: value)
            }
            var names: [UInt16: String] = [:]
            for entry in entries {
                let zone = try zoneNumber(entry.key)
                guard names[zone] == nil else {
                    throw ConfigValueProblem("zone \(zone) is named twice", at: entry.key, key: String(zone))
                }
                names[zone] = try zoneName(entry.value, zone: zone, key: entry.key)
            }
            return ZoneNames(names)
        }
    }

    /// A mapping's key as a zone number; a problem names the key as written.
    private static func zoneNumber(_ key: RawConfigValue) throws(ConfigValueProblem) -> UInt16 {
        guard case .scalar(let raw) = key.kind else {
            throw ConfigValueProblem("expected a zone number (0–65535) as the key", at: key)
        }
        let text = raw.trimmingSpaces()
        let shownKey = text.unicodeScalars.count <= 20 ? text : String(text.unicodeScalars.prefix(20)) + "…"
        guard let zone = IntegerText.parse(text, as: Int64.self) else {
            let reason =
                IntegerText.hasIntegerSyntax(text)
                ? "zone \(shown(text)) is outside 0...\(UInt16.max)"
                : "expected a zone number (0–65535), found \(quoted(text))"
            throw ConfigValueProblem(reason, at: key, key: shownKey)
        }
        guard let zone = UInt16(exactly: zone) else {
            throw ConfigValueProblem("zone \(shown(text)) is outside 0...\(UInt16.max)", at: key, key: shownKey)
        }
        return zone
    }

    private static func zoneName(_ value: RawConfigValue, zone: UInt16, key: RawConfigValue)
        throws(ConfigValueProblem) -> String
    {
        switch value.kind {
        case .scalar(let text):
            switch ZoneNames.checkedName(text) {
            case .success(let name): return name
            case .failure(let problem):
                throw ConfigValueProblem(problem.reason(text.trimmingSpaces()), at: value, key: String(zone))
            }
        case .null: throw ConfigValueProblem("a name is required", at: key, key: String(zone))
        case .sequence, .mapping:
            throw ConfigValueProblem("expected a name, found a list or mapping", at: value, key: String(zone))
        }
    }

    /// Flag text (`{3: "Main grandstand", 12: Pit lane}`) composed as YAML, with the file's bounds.
    private static func zoneNames(flagText text: String, expected: String) throws(ConfigValueProblem)
        -> ZoneNames
    {
        if YAMLBounds.anchorOrAlias(in: text, file: "") != nil {
            throw ConfigValueProblem("YAML anchors and aliases are not accepted")
        }
        let node: Node?
        do {
            node = try Yams.compose(yaml: text)
        } catch {
            throw ConfigValueProblem("expected \(expected), found \(quoted(text))")
        }
        guard let node else { return ZoneNames() }
        if YAMLBounds.check(node, file: "") != nil {
            throw ConfigValueProblem("too many YAML nodes, or an anchor")
        }
        let parsed = RawConfigValue(node: node)
        guard case .mapping = parsed.kind else {
            throw ConfigValueProblem("expected \(expected), found \(quoted(text))")
        }
        return try zoneNames(parsed)
    }
}
