import BLEPayload
import CircuitState
import Glibc
import Logging

/// A value before it is checked: a YAML node, or the text of a flag.
package struct RawConfigValue: Sendable {
    enum Kind: Sendable {
        /// An empty value, `~` or `null` (plain, not quoted).
        case null
        case scalar(String)
        case sequence([RawConfigValue])
        /// A mapping's entries, in file order (only `zones.names` takes one).
        case mapping([MappingEntry])
    }

    struct MappingEntry: Sendable {
        var key: RawConfigValue
        var value: RawConfigValue
    }

    var kind: Kind
    var line: Int?
    var column: Int?

    init(_ kind: Kind, line: Int? = nil, column: Int? = nil) {
        self.kind = kind
        self.line = line
        self.column = column
    }

    /// A flag's text. Flags are never null: `--remote-url null` is a (bad) URL.
    package static func flag(_ text: String) -> RawConfigValue { RawConfigValue(.scalar(text)) }
}

/// Why a value was refused; the position narrows it to a list entry when there is one.
package struct ConfigValueProblem: Error, Sendable {
    package var reason: String
    var line: Int?
    var column: Int?
    /// Narrows the key to a mapping entry: `3` makes `zones.names` the problem of `zones.names.3`.
    var keySuffix: String?

    init(_ reason: String, at value: RawConfigValue? = nil, key keySuffix: String? = nil) {
        self.reason = reason
        self.line = value?.line
        self.column = value?.column
        self.keySuffix = keySuffix
    }

    /// `key`'s dotted path, narrowed by `keySuffix`.
    func keyPath(_ key: ConfigKey) -> String { key.rawValue + (keySuffix.map { "." + $0 } ?? "") }
}

/// The checks every key's value goes through, from a file or from a flag.
package enum ConfigValueParser {
    static let maxQuotedLength = 60

    /// `"text"` for messages, escaped and shortened so a hostile file cannot drive the terminal.
    static func quoted(_ text: String) -> String {
        TerminalText.quoted(text, maxLength: maxQuotedLength)
    }

    private static func found(_ value: RawConfigValue) -> String {
        switch value.kind {
        case .null: "nothing"
        case .scalar(let text): quoted(text)
        case .sequence: "a list"
        case .mapping: "a mapping"
        }
    }

    static func scalar(_ value: RawConfigValue, expected: String) throws(ConfigValueProblem) -> String {
        switch value.kind {
        case .scalar(let text): return text.trimmingSpaces()
        case .null: throw ConfigValueProblem("a value is required: expected \(expected)", at: value)
        case .sequence, .mapping: throw ConfigValueProblem("expected \(expected), found \(found(value))", at: value)
        }
    }

    static func string(_ value: RawConfigValue, expected: String = "a string") throws(ConfigValueProblem) -> String {
        let text = try scalar(value, expected: expected)
        if text.isEmpty { throw ConfigValueProblem("must not be empty", at: value) }
        if text.unicodeScalars.contains(where: isControl) {
            throw ConfigValueProblem("\(quoted(text)) contains a control character", at: value)
        }
        return text
    }

    static func bool(_ value: RawConfigValue) throws(ConfigValueProblem) -> Bool {
        let text = try scalar(value, expected: "true or false")
        switch text {
        case "true", "True", "TRUE": return true
        case "false", "False", "FALSE": return false
        default: throw ConfigValueProblem("expected true or false, found \(quoted(text))", at: value)
        }
    }

    /// Decimal or `0x` hex, with an optional sign, within `range`.
    package static func integer<Value: FixedWidthInteger & Sendable>(
        _ value: RawConfigValue, in range: ClosedRange<Value>, as _: Value.Type = Value.self
    ) throws(ConfigValueProblem) -> Value {
        let text = try scalar(value, expected: "an integer")
        guard let wide = IntegerText.parse(text, as: Int64.self) else {
            if IntegerText.hasIntegerSyntax(text) {
                throw ConfigValueProblem(
                    "must be between \(range.lowerBound) and \(range.upperBound), found \(shown(text))", at: value)
            }
            if text.contains(".") {
                throw ConfigValueProblem("expected a whole number, found \(quoted(text))", at: value)
            }
            throw ConfigValueProblem("expected an integer (decimal or 0x hex), found \(quoted(text))", at: value)
        }
        guard wide >= Int64(range.lowerBound), wide <= Int64(range.upperBound) else {
            throw ConfigValueProblem(
                "must be between \(range.lowerBound) and \(range.upperBound), found \(shown(text))", at: value)
        }
        // In range, so the conversion cannot fail; `exactly` keeps that from ever being a trap.
        guard let narrow = Value(exactly: wide) else {
            throw ConfigValueProblem("must be between \(range.lowerBound) and \(range.upperBound)", at: value)
        }
        return narrow
    }

    static func speed(_ value: RawConfigValue) throws(ConfigValueProblem) -> ReplaySpeed {
        let text = try scalar(value, expected: "a speed factor or max")
        if text.lowercased() == "max" { return .max }
        let maximum = ReplaySpeed.maxFactorMillionths / 1_000_000
        let millionths: Int64
        switch DecimalMillionths.parse(text) {
        case .success(let parsed): millionths = parsed
        case .failure(.notANumber):
            throw ConfigValueProblem(
                "expected a positive number (1 is real time) or max, found \(quoted(text))", at: value)
        case .failure(.negative):
            throw ConfigValueProblem("must not be negative, found \(shown(text))", at: value)
        case .failure(.tooManyDecimals):
            throw ConfigValueProblem("\(quoted(text)) has more than 6 decimal places", at: value)
        case .failure(.tooLarge):
            throw ConfigValueProblem(
                "must be at most \(maximum) (use max to skip waiting), found \(shown(text))", at: value)
        }
        guard millionths > 0 else { throw ConfigValueProblem("must be greater than 0 (or max)", at: value) }
        guard millionths <= ReplaySpeed.maxFactorMillionths else {
            throw ConfigValueProblem(
                "must be at most \(maximum) (use max to skip waiting), found \(shown(text))", at: value)
        }
        return .factor(millionths: millionths)
    }

    static func path(_ value: RawConfigValue, relativeTo base: String?) throws(ConfigValueProblem) -> String {
        let text = try string(value, expected: "a path")
        guard let base, !text.hasPrefix("/") else { return text }
        return base.hasSuffix("/") ? base + text : base + "/" + text
    }

    /// A path that must name a readable file now, so a typo is caught at start or reload.
    static func readableFile(_ value: RawConfigValue, relativeTo base: String?) throws(ConfigValueProblem) -> String {
        let path = try path(value, relativeTo: base)
        try checkReadable(path, value: value)
        return path
    }

    /// Opens `path` as `RegularFile` does (non-blocking; a FIFO, a device or a directory is refused
    /// unread) and closes it: the file a key names is then known to be one that can be read whole.
    static func checkReadable(_ path: String, value: RawConfigValue?) throws(ConfigValueProblem) {
        do throws(RegularFile.OpenError) {
            try RegularFile.check(path)
        } catch {
            switch error {
            case .open(let code), .stat(let code):
                throw ConfigValueProblem("cannot read \(quoted(path)): \(errnoText(code))", at: value)
            case .notRegular:
                throw ConfigValueProblem("\(quoted(path)) \(error)", at: value)
            }
        }
    }

    static func backend(_ value: RawConfigValue) throws(ConfigValueProblem) -> ScannerBackend {
        let text = try scalar(value, expected: "a backend")
        guard let backend = ScannerBackend(rawValue: text) else {
            throw ConfigValueProblem("unknown backend \(quoted(text)) (expected hci, bluez or replay)", at: value)
        }
        return backend
    }

    static func beaconBackend(_ value: RawConfigValue) throws(ConfigValueProblem) -> BeaconBackend {
        let text = try scalar(value, expected: "a backend")
        guard let backend = BeaconBackend(rawValue: text) else {
            throw ConfigValueProblem("unknown backend \(quoted(text)) (expected hci or bluez)", at: value)
        }
        return backend
    }

    /// `beacon.frame_version`: the frames the transmitter sends: v1, v3 or both.
    static func beaconFrameVersion(_ value: RawConfigValue) throws(ConfigValueProblem) -> BeaconFrameVersion {
        let text = try scalar(value, expected: "v1, v3 or both")
        guard let version = BeaconFrameVersion(text: text) else {
            throw ConfigValueProblem("expected v1, v3 or both, found \(quoted(text))", at: value)
        }
        return version
    }

    static func adapter(_ value: RawConfigValue) throws(ConfigValueProblem) -> String {
        let text = try string(value, expected: "an adapter name like hci0")
        guard (1...64).contains(text.utf8.count), text.utf8.allSatisfy({ (0x21...0x7E).contains($0) && $0 != 0x2F })
        else {
            throw ConfigValueProblem("\(quoted(text)) is not an adapter name like hci0", at: value)
        }
        return text
    }

    static func policy(_ value: RawConfigValue) throws(ConfigValueProblem) -> Policy {
        let text = try scalar(value, expected: "a policy")
        guard let policy = Policy(rawValue: text) else {
            throw ConfigValueProblem(
                "unknown policy \(quoted(text)) (expected safety, beacon-first or most-severe)", at: value)
        }
        return policy
    }

    /// `beacon.uid`: 1 to 64 printable ASCII characters (the panel's key and label).
    static func beaconUID(_ value: RawConfigValue) throws(ConfigValueProblem) -> String {
        let text = try scalar(value, expected: "a beacon id")
        guard (1...64).contains(text.utf8.count), text.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw ConfigValueProblem("expected 1 to 64 printable ASCII characters, found \(quoted(text))", at: value)
        }
        return text
    }

    static func commandFrames(_ value: RawConfigValue) throws(ConfigValueProblem) -> CommandFramePolicy {
        let text = try scalar(value, expected: "honour or report")
        guard let policy = CommandFramePolicy(rawValue: text) else {
            throw ConfigValueProblem("expected honour or report, found \(quoted(text))", at: value)
        }
        return policy
    }

    static func unsignedFrames(_ value: RawConfigValue) throws(ConfigValueProblem) -> UnsignedFramePolicy {
        let text = try scalar(value, expected: "accept or reject")
        guard let policy = UnsignedFramePolicy(rawValue: text) else {
            throw ConfigValueProblem("expected accept or reject, found \(quoted(text))", at: value)
        }
        return policy
    }

    static func logLevel(_ value: RawConfigValue) throws(ConfigValueProblem) -> Logger.Level {
        let text = try scalar(value, expected: "a log level")
        guard let level = Logger.Level(rawValue: text.lowercased()) else {
            throw ConfigValueProblem(
                "unknown log level \(quoted(text)) "
                    + "(expected trace, debug, info, notice, warning, error or critical)", at: value)
        }
        return level
    }

    /// `http://host…`, `https://host…` or `file:///path`: `RemoteURL`'s rules.
    static func url(_ value: RawConfigValue) throws(ConfigValueProblem) -> String {
        let text = try string(value, expected: "a URL")
        do throws(RemoteURL.Problem) {
            return try RemoteURL(parsing: text).text
        } catch {
            throw ConfigValueProblem(error.reason, at: value)
        }
    }

    /// The entries of a list: a YAML sequence of scalars, or one comma-separated scalar.
    static func entries(_ value: RawConfigValue) throws(ConfigValueProblem) -> [(text: String, value: RawConfigValue)] {
        switch value.kind {
        case .null: return []
        case .mapping: throw ConfigValueProblem("expected a list, found a mapping", at: value)
        case .scalar(let text):
            let trimmed = text.trimmingSpaces()
            if trimmed.isEmpty { return [] }
            return trimmed.split(separator: ",", omittingEmptySubsequences: false).map {
                (String($0).trimmingSpaces(), value)
            }
        case .sequence(let items):
            var result: [(text: String, value: RawConfigValue)] = []
            for item in items {
                guard case .scalar(let text) = item.kind else {
                    throw ConfigValueProblem("list entries must be single values, found \(found(item))", at: item)
                }
                result.append((text.trimmingSpaces(), item))
            }
            return result
        }
    }

    /// Zone numbers; empty (or `all`) admits every zone.
    package static func zones(_ value: RawConfigValue) throws(ConfigValueProblem) -> Set<UInt16> {
        if case .scalar(let text) = value.kind, text.trimmingSpaces().lowercased() == "all" { return [] }
        var zones = Set<UInt16>()
        for (index, entry) in try entries(value).enumerated() {
            guard let zone = IntegerText.parse(entry.text, as: Int64.self) else {
                throw ConfigValueProblem(
                    "entry \(index + 1): expected a zone number, found \(quoted(entry.text))", at: entry.value)
            }
            guard zone >= 0 && zone <= Int64(UInt16.max) else {
                throw ConfigValueProblem(
                    "entry \(index + 1): zone \(entry.text) is outside 0...\(UInt16.max)", at: entry.value)
            }
            zones.insert(UInt16(zone))
        }
        return zones
    }

    /// Beacon addresses (`AA:BB:CC:DD:EE:FF`) and v2 source ids (decimal or 0x).
    static func allowList(_ value: RawConfigValue) throws(ConfigValueProblem) -> AllowList {
        var allow = AllowList()
        for (index, entry) in try entries(value).enumerated() {
            if let address = BluetoothAddress(entry.text) {
                allow.addresses.insert(address)
            } else if let id = IntegerText.parse(entry.text, as: Int64.self) {
                guard id >= 0 && id <= Int64(UInt32.max) else {
                    throw ConfigValueProblem(
                        "entry \(index + 1): source id \(entry.text) is outside 0...\(UInt32.max)", at: entry.value)
                }
                allow.sourceIDs.insert(UInt32(id))
            } else {
                throw ConfigValueProblem(
                    "entry \(index + 1): \(quoted(entry.text)) is neither an address like AA:BB:CC:DD:EE:FF "
                        + "nor a source id", at: entry.value)
            }
        }
        return allow
    }

    /// The distance gate's range, metres: BLE is not heard much beyond a kilometre.
    static let metresRange: ClosedRange<Double> = 0.1...1000
    /// `fusion.p1m_dbm`'s range: received power at 1 m, dBm.
    static let referencePowerRange: ClosedRange<Double> = -100...0

    /// Metres, 0.1 to 1000.
    static func metres(_ value: RawConfigValue) throws(ConfigValueProblem) -> Double {
        try decimal(value, what: "a distance in metres", in: metresRange, unit: "metres")
    }

    /// dBm at 1 m, −100 to 0.
    static func referencePower(_ value: RawConfigValue) throws(ConfigValueProblem) -> Double {
        try decimal(value, what: "a power in dBm (like -59)", in: referencePowerRange, unit: "dBm")
    }

    /// A plain decimal (`12.5`, `-59`, `1e2`) within `range`: no hex, `nan`, `inf`, or values that round
    /// to infinity (`1e400`). Negative zero is zero.
    static func decimal(_ value: RawConfigValue, what: String, in range: ClosedRange<Double>, unit: String)
        throws(ConfigValueProblem) -> Double
    {
        let text = try scalar(value, expected: what)
        let plain = text.unicodeScalars.allSatisfy {
            ($0.value >= 0x30 && $0.value <= 0x39) || "+-.eE".unicodeScalars.contains($0)
        }
        guard plain, text.utf8.count <= 64, let number = Double(text) else {
            throw ConfigValueProblem("expected \(what), found \(quoted(text))", at: value)
        }
        let bounds = "\(Self.decimalText(range.lowerBound)) and \(Self.decimalText(range.upperBound)) \(unit)"
        guard number.isFinite, range.contains(number) else {
            throw ConfigValueProblem("must be between \(bounds), found \(shown(text))", at: value)
        }
        return number == 0 ? 0 : number
    }

    /// `0.1`, `1000`, `-100`: a bound as the docs write it.
    private static func decimalText(_ number: Double) -> String {
        number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : String(number)
    }

    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }
}
