/// `scanner.adapter`: the adapters the scanner listens on at once (docs/configuration.md).
///
/// One name (`hci0`), a list (`[hci0, hci1]`; on the command line `--adapter` given again for
/// each), or `auto`: every LE adapter the kernel has, and any that appears later.
package enum ScannerAdapters: Hashable, Sendable, CustomStringConvertible {
    /// 1 to `maxCount` distinct names, in the order given.
    case named([String])
    case auto

    /// A cap on the adapters one daemon scans: each costs a thread and a socket.
    package static let maxCount = 8

    package static let `default` = ScannerAdapters.named([DaemonConfiguration.Scanner.defaultAdapter])

    /// The names given; empty for `auto`.
    package var names: [String] {
        switch self {
        case .named(let names): names
        case .auto: []
        }
    }

    /// Several adapters are (or may come to be) scanned: the hub counts an advert's copies once.
    package var filtersCopies: Bool {
        switch self {
        case .named(let names): names.count > 1
        case .auto: true
        }
    }

    /// `hci0`, `[hci0,hci1]` or `auto`: what the parser takes back.
    package var description: String {
        switch self {
        case .auto: "auto"
        case .named(let names) where names.count == 1: names[0]
        case .named(let names): "[" + names.joined(separator: ",") + "]"
        }
    }
}

extension ConfigValueParser {
    /// `scanner.adapter`: `auto`, one adapter name, or a list of distinct names.
    static func adapters(_ value: RawConfigValue) throws(ConfigValueProblem) -> ScannerAdapters {
        if case .scalar(let text) = value.kind, text.trimmingSpaces() == "auto" { return .auto }
        let entries = try entries(value)
        guard !entries.isEmpty else {
            throw ConfigValueProblem("name at least one adapter, like hci0, or auto", at: value)
        }
        guard entries.count <= ScannerAdapters.maxCount else {
            throw ConfigValueProblem(
                "\(entries.count) adapters; one daemon scans at most \(ScannerAdapters.maxCount)", at: value)
        }
        var names: [String] = []
        for (index, entry) in entries.enumerated() {
            let name: String
            do throws(ConfigValueProblem) {
                name = try adapter(
                    RawConfigValue(.scalar(entry.text), line: entry.value.line, column: entry.value.column))
            } catch {
                let place = entries.count > 1 ? "entry \(index + 1): " : ""
                throw ConfigValueProblem(place + error.reason, at: entry.value)
            }
            guard name != "auto" else {
                throw ConfigValueProblem("entry \(index + 1): auto stands alone, not in a list", at: entry.value)
            }
            guard !names.contains(name) else {
                throw ConfigValueProblem("entry \(index + 1): \(quoted(name)) is listed twice", at: entry.value)
            }
            names.append(name)
        }
        return .named(names)
    }
}
