import Glibc
import Yams

extension DaemonConfiguration {
    /// A config file larger than this is refused rather than read.
    static let maxFileBytes = 1 << 20

    /// Reads and checks a config file, with no flags on top. Every problem in the file is reported.
    static func load(path: String) throws(ConfigurationError) -> DaemonConfiguration {
        try load(path: path, overrides: DaemonOverrides())
    }

    /// What `beacond run` runs with: the file at `path` (nil: defaults only), then the flags on top,
    /// then the checks that span keys. Use this at start and again on SIGHUP.
    package static func load(path: String?, overrides: DaemonOverrides) throws(ConfigurationError)
        -> DaemonConfiguration
    {
        try loadIdentified(path: path, overrides: overrides).configuration
    }

    /// `load(path:overrides:)`, with the file's identity: the SHA-256 of the very bytes parsed.
    package static func loadIdentified(path: String?, overrides: DaemonOverrides) throws(ConfigurationError)
        -> LoadedConfiguration
    {
        guard let path else {
            return LoadedConfiguration(configuration: try overrides.applied(to: DaemonConfiguration()), file: nil)
        }
        let (file, digest) = try parseIdentified(path: path)
        return LoadedConfiguration(
            configuration: try overrides.applied(to: file), file: ConfigFileIdentity(path: path, sha256: digest))
    }

    /// `--config` absent: the default file when it exists, otherwise nil (built-in defaults).
    package static func defaultPathIfPresent(_ path: String = defaultPath) -> String? {
        var info = stat()
        return stat(path, &info) == 0 ? path : nil
    }

    /// Reads a file's keys without the checks that span keys (those wait for the flags).
    static func parse(path: String) throws(ConfigurationError) -> DaemonConfiguration {
        try parseIdentified(path: path).configuration
    }

    /// `parse(path:)` and the SHA-256 of the bytes it parsed: the file is read once, and the one
    /// buffer is both hashed and parsed, so a file replaced in between cannot pair one file's
    /// settings with another's digest.
    static func parseIdentified(path: String, reader: ConfigKey.Reader = .daemon) throws(ConfigurationError)
        -> (configuration: DaemonConfiguration, sha256: SHA256Digest)
    {
        let bytes = try readFile(path)
        let digest = SHA256Digest(of: bytes)
        let text = String(decoding: bytes, as: UTF8.self)
        let directory: String
        if let slash = path.lastIndex(of: "/") {
            directory = slash == path.startIndex ? "/" : String(path[..<slash])
        } else {
            directory = "."
        }
        return (try parse(yaml: text, file: path, relativeTo: directory, reader: reader), digest)
    }

    /// Parses YAML text as a config file named `file`; `base` resolves relative paths.
    /// `reader`: whose keys are read (the kiosk reads only `kiosk.*`, `KioskSettings.load`).
    static func parse(
        yaml: String, file: String, relativeTo base: String?, reader: ConfigKey.Reader = .daemon
    ) throws(ConfigurationError) -> DaemonConfiguration {
        if let problem = YAMLBounds.anchorOrAlias(in: yaml, file: file) { throw ConfigurationError(problem) }
        let root: Node?
        do {
            root = try Yams.compose(yaml: yaml)
        } catch {
            throw ConfigurationError(yamlProblem(error, file: file, text: yaml))
        }
        if let root, let problem = YAMLBounds.check(root, file: file) { throw ConfigurationError(problem) }
        var walker = ConfigurationWalker(file: file, base: base, reader: reader)
        if let root {
            switch root {
            case .mapping(let mapping):
                walker.walk(mapping, prefix: "")
            case _ where RawConfigValue(node: root).isNull:
                break // an empty document: the defaults
            default:
                walker.problems.append(
                    ConfigurationProblem(
                        file: file, key: nil, line: root.mark?.line, column: root.mark?.column,
                        reason: "expected a mapping of keys at the top level (like `fusion:` and `scanner:`)"))
            }
        }
        if !walker.problems.isEmpty { throw ConfigurationError(walker.problems) }
        return walker.configuration
    }

    /// The file's bytes, checked for size and UTF-8. Only a regular file is read (`RegularFile`):
    /// a FIFO named by `--config`, or put in the config file's place before a SIGHUP, is refused at
    /// once instead of blocking start-up or the reload in `open(2)`.
    private static func readFile(_ path: String) throws(ConfigurationError) -> [UInt8] {
        let bytes: [UInt8]
        do {
            bytes = try readRegularFilePrefix(path, maxBytes: maxFileBytes)
        } catch {
            throw ConfigurationError(ConfigurationProblem(file: path, key: nil, reason: error.description))
        }
        if bytes.count > maxFileBytes {
            throw ConfigurationError(ConfigFileBytes.tooLarge(bytes, limit: maxFileBytes, file: path))
        }
        if let problem = ConfigFileBytes.invalidUTF8(bytes, file: path) { throw ConfigurationError(problem) }
        return bytes
    }

    private static func yamlProblem(_ error: any Error, file: String, text: String) -> ConfigurationProblem {
        func problem(_ mark: Mark?, _ reason: String) -> ConfigurationProblem {
            ConfigurationProblem(file: file, key: nil, line: mark?.line, column: mark?.column, reason: reason)
        }
        func contextText(_ context: YamlError.Context?) -> String {
            guard let context else { return "" }
            return " (\(context.text) at line \(context.mark.line))"
        }
        guard let error = error as? YamlError else { return problem(nil, "invalid YAML: \(error)") }
        switch error {
        case .scanner(let context, let reason, let mark, _), .parser(let context, let reason, let mark, _),
            .composer(let context, let reason, let mark, _):
            return problem(mark, "invalid YAML: \(reason)\(contextText(context))")
        case .duplicatedKeysInMapping(let duplicates, let context):
            let names = duplicates.map { ConfigValueParser.quoted($0) }.joined(separator: ", ")
            // Yams marks the first occurrence; the one to fix is the later one.
            guard duplicates.count == 1,
                let again = YAMLDuplicateKey.repeated(duplicates[0], first: context.mark, in: text)
            else { return problem(context.mark, "duplicate key \(names) in one mapping") }
            return ConfigurationProblem(
                file: file, key: nil, line: again.line, column: again.column,
                reason: "duplicate key \(names) (first at line \(context.mark.line))")
        case .reader(let reason, let offset, _, _):
            var line: Int?
            if let offset {
                line = 1 + text.prefix(offset).reduce(0) { $1 == "\n" ? $0 + 1 : $0 }
            }
            return ConfigurationProblem(file: file, key: nil, line: line, reason: "cannot read YAML: \(reason)")
        default:
            return problem(nil, "invalid YAML: \(error)")
        }
    }
}

extension RawConfigValue {
    init(node: Node) {
        let line = node.mark?.line
        let column = node.mark?.column
        switch node {
        case .scalar(let scalar):
            let nullWords: Set<String> = ["", "~", "null", "Null", "NULL"]
            if scalar.style == .plain && nullWords.contains(scalar.string) {
                self.init(.null, line: line, column: column)
            } else {
                self.init(.scalar(scalar.string), line: line, column: column)
            }
        case .sequence(let sequence):
            self.init(.sequence(sequence.map(RawConfigValue.init(node:))), line: line, column: column)
        case .mapping(let mapping):
            let entries = mapping.map {
                MappingEntry(key: RawConfigValue(node: $0.key), value: RawConfigValue(node: $0.value))
            }
            self.init(.mapping(entries), line: line, column: column)
        case .alias:
            // Unreachable: YAMLBounds refuses aliases before anything is composed.
            self.init(.mapping([]), line: line, column: column)
        }
    }

    var isNull: Bool {
        if case .null = kind { return true }
        return false
    }
}

/// Walks a config file's mapping, setting keys and collecting every problem.
struct ConfigurationWalker {
    let file: String
    let base: String?
    /// Whose keys are set; the other program's are skipped.
    let reader: ConfigKey.Reader
    var configuration = DaemonConfiguration()
    var problems: [ConfigurationProblem] = []
    /// Keys and sections set so far, with the line of their first setting.
    private var seen: [String: Int?] = [:]

    init(file: String, base: String?, reader: ConfigKey.Reader = .daemon) {
        self.file = file
        self.base = base
        self.reader = reader
    }

    mutating func walk(_ mapping: Node.Mapping, prefix: String) {
        for (keyNode, valueNode) in mapping {
            guard case .scalar(let keyScalar) = keyNode else {
                problems.append(
                    ConfigurationProblem(
                        file: file, key: prefix.isEmpty ? nil : prefix, line: keyNode.mark?.line,
                        column: keyNode.mark?.column, reason: "keys must be plain names"))
                continue
            }
            let path = prefix.isEmpty ? keyScalar.string : prefix + "." + keyScalar.string
            let line = keyNode.mark?.line
            let column = keyNode.mark?.column
            if let problem = duplicate(path, line: line, column: column) {
                problems.append(problem)
                continue
            }
            if let key = ConfigKey(rawValue: path), key.reader != reader {
                continue // the other program's key: known by name, its value that program's to check
            } else if let key = ConfigKey(rawValue: path) {
                configuration.origins[key] = .file(path: file, line: line, column: column)
                let value = RawConfigValue(node: valueNode)
                do throws(ConfigValueProblem) {
                    try configuration.set(key, to: value, relativeTo: base)
                } catch {
                    // An empty value has no position of its own worth showing: point at its key.
                    let placed = error.line != nil && !value.isNull
                    problems.append(
                        ConfigurationProblem(
                            file: file, key: error.keyPath(key), line: placed ? error.line : line,
                            column: placed ? error.column : column,
                            reason: error.reason))
                }
            } else if ConfigKey.sections.contains(path) {
                switch valueNode {
                case .mapping(let section): walk(section, prefix: path)
                case _ where RawConfigValue(node: valueNode).isNull: break
                default:
                    let keys = ConfigKey.allCases.map(\.rawValue).filter { $0.hasPrefix(path + ".") }
                    problems.append(
                        ConfigurationProblem(
                            file: file, key: path, line: line, column: column,
                            reason: "expected a mapping of keys (\(keys.joined(separator: ", ")))"))
                }
            } else {
                var reason = "unknown key"
                if let suggestion = Self.suggestion(for: path) { reason += " (did you mean \(suggestion)?)" }
                problems.append(ConfigurationProblem(file: file, key: path, line: line, column: column, reason: reason))
            }
        }
    }

    /// A key or section named a second time: Yams catches two identical keys in one mapping, but
    /// not the same key spelt differently (`max_ttl` and `!custom max_ttl`, or `fusion.max_ttl:`
    /// at the top level beside `max_ttl:` inside `fusion:`), nor a section given twice that way.
    /// Either would let the later value win silently.
    private mutating func duplicate(_ path: String, line: Int?, column: Int?) -> ConfigurationProblem? {
        guard ConfigKey(rawValue: path) != nil || ConfigKey.sections.contains(path) else { return nil }
        guard let first = seen[path] else {
            seen[path] = line
            return nil
        }
        let earlier = first.map { " (first at line \($0))" } ?? ""
        return ConfigurationProblem(
            file: file, key: path, line: line, column: column, reason: "duplicate key\(earlier)")
    }

    /// The known key or section closest to a misspelt one, if any is close.
    static func suggestion(for path: String) -> String? {
        let leaf = path.split(separator: ".").last.map(String.init) ?? path
        var best: (name: String, distance: Int)?
        let candidates = ConfigKey.allCases.map(\.rawValue) + ConfigKey.sections.sorted()
        for candidate in candidates {
            var distance = editDistance(path, candidate)
            let candidateLeaf = candidate.split(separator: ".").last.map(String.init) ?? candidate
            if candidateLeaf == leaf { distance = min(distance, 1) }
            if distance < (best?.distance ?? Int.max) { best = (candidate, distance) }
        }
        guard let best, best.distance <= max(2, path.count / 4) else { return nil }
        return best.name
    }

    static func editDistance(_ lhs: String, _ rhs: String) -> Int {
        let a = Array(lhs.unicodeScalars)
        let b = Array(rhs.unicodeScalars)
        if a.isEmpty { return b.count }
        var previous = Array(0...b.count)
        var current = previous
        for i in 1...a.count {
            current[0] = i
            if !b.isEmpty {
                for j in 1...b.count {
                    current[j] = min(
                        previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
                }
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}
