import BeacondClient
import Glibc
import Yams

/// Reads the kiosk's language catalogues (docs/kiosk.md, "Languages"): `<code>.yaml` from the
/// shipped folder, then from the venue's (`kiosk.language_dir`), whose keys replace the shipped
/// ones. A problem in a file is reported with its file and line and costs only what it touches:
/// a bad key falls back to the shipped text or English, an unreadable file to the other folder, a
/// language with no file at all leaves the cycle. A kiosk always shows something: with no
/// language left, it shows the built-in English.
package enum KioskCatalogueFiles {
    /// A catalogue is a few kilobytes; anything past this is not one.
    static let maxFileBytes = 64 * 1024
    /// The longest text kept, in characters.
    static let maxTextLength = 200

    package struct Loaded: Sendable {
        /// The languages found, in `kiosk.languages` order; never empty.
        package var catalogues: [KioskCatalogue]
        /// One line per problem: `FILE:LINE: reason`.
        package var problems: [String]
    }

    /// The catalogues of `languages`, read from `directories` in order (later ones override).
    package static func load(languages: [String], directories: [String]) -> Loaded {
        var catalogues: [KioskCatalogue] = []
        var problems: [String] = []
        for code in languages {
            var texts: [KioskPhrase: String] = [:]
            var name: String?
            var found = code == "en"
            for directory in directories {
                let path = directory + "/" + code + ".yaml"
                guard let file = read(path, problems: &problems),
                    let parsed = parse(file, path: path, code: code, problems: &problems)
                else { continue }
                found = true
                texts.merge(parsed.texts) { _, venue in venue }
                name = parsed.name ?? name
            }
            guard found else {
                let language = TerminalText.quoted(code, maxLength: 20)
                problems.append(
                    "no usable catalogue for language \(language) (looked for \(code).yaml in "
                        + directories.map { TerminalText.escaped($0) }.joined(separator: " and ")
                        + "): it is left out of the cycle")
                continue
            }
            catalogues.append(KioskCatalogue(language: code, name: name ?? code, texts: texts))
        }
        if catalogues.isEmpty {
            problems.append("no language left to show: showing the built-in English")
            catalogues = [.english]
        }
        return Loaded(catalogues: catalogues, problems: problems)
    }

    /// Where the catalogues the binary shipped with are: `PREFIX/share/beacond/languages` beside
    /// `PREFIX/bin/beacond`, else the source tree's `languages/` above a build folder's binary.
    package static func shippedDirectory(executable: String? = DocumentationPath.runningExecutable()) -> String {
        guard let executable else { return "languages" }
        var folder = executable
        for level in 0..<6 {
            guard let slash = folder.lastIndex(of: "/") else { break }
            folder = String(folder[..<slash])
            if level == 1, isDirectory(folder + "/share/beacond/languages") {
                return folder + "/share/beacond/languages"
            }
            if isFile(folder + "/languages/en.yaml") { return folder + "/languages" }
        }
        return "languages"
    }

    private static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
    }

    private static func isFile(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFREG
    }

    /// The file's text; nil when it is absent (silently) or unusable (a problem).
    private static func read(_ path: String, problems: inout [String]) -> String? {
        let bytes: [UInt8]
        do {
            bytes = try readRegularFile(path, maxBytes: maxFileBytes)
        } catch {
            if case .open(let code) = error, code == ENOENT || code == ENOTDIR { return nil }
            let reason = error == .tooLarge ? "is larger than \(maxFileBytes / 1024) KiB" : error.description
            problems.append("\(TerminalText.escaped(path)): \(reason): not used")
            return nil
        }
        if let problem = ConfigFileBytes.invalidUTF8(bytes, file: path) {
            problems.append("\(problem): not used")
            return nil
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The file's texts and name; nil when the file as a whole is unusable.
    private static func parse(
        _ text: String, path: String, code: String, problems: inout [String]
    ) -> (texts: [KioskPhrase: String], name: String?)? {
        func report(_ line: Int?, _ reason: String) {
            problems.append(TerminalText.escaped(path) + (line.map { ":\($0)" } ?? "") + ": " + reason)
        }
        if let problem = YAMLBounds.anchorOrAlias(in: text, file: path) {
            problems.append("\(problem): not used")
            return nil
        }
        let root: Node?
        do {
            root = try Yams.compose(yaml: text)
        } catch {
            report(nil, "invalid YAML (\(error)): not used")
            return nil
        }
        guard case .mapping(let mapping)? = root else {
            report(root?.mark?.line, "expected a mapping of keys like `red: BANDERA ROJA`: not used")
            return nil
        }
        var texts: [KioskPhrase: String] = [:]
        var name: String?
        for (keyNode, valueNode) in mapping {
            let line = keyNode.mark?.line
            guard case .scalar(let key) = keyNode, case .scalar(let value) = valueNode else {
                report(line, "expected `key: text` on one line: skipped")
                continue
            }
            let shown = KioskText.stripped(value.string, limit: maxTextLength)
            switch key.string {
            case "language":
                if value.string != code {
                    report(
                        line, "says language \(TerminalText.quoted(value.string, maxLength: 20)), but is \(code).yaml")
                }
            case "name":
                if !shown.isEmpty { name = shown }
            default:
                guard let phrase = KioskPhrase(rawValue: key.string) else {
                    report(line, "unknown key \(TerminalText.quoted(key.string, maxLength: 40)): skipped")
                    continue
                }
                guard !shown.isEmpty else {
                    report(line, "\(phrase.rawValue) is empty: shown in English")
                    continue
                }
                let wanted = Set(KioskCatalogue.placeholders(in: phrase.english))
                let given = KioskCatalogue.placeholders(in: shown)
                guard Set(given) == wanted, given.count == wanted.count else {
                    let names = wanted.sorted().map { "{\($0)}" }.joined(separator: " ")
                    report(
                        line,
                        "\(phrase.rawValue) must hold " + (wanted.isEmpty ? "no {placeholder}" : "\(names), each once")
                            + ": shown in English")
                    continue
                }
                texts[phrase] = shown
            }
        }
        return (texts, name)
    }
}
