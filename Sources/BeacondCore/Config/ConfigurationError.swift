/// One thing wrong with a configuration: where it is and why.
struct ConfigurationProblem: Hashable, Sendable, CustomStringConvertible {
    /// The config file, when the value came from one.
    var file: String?
    /// The flag (`--policy`), when the value came from the command line.
    var flag: String?
    /// The dotted key (`fusion.policy`); nil for a problem with the file as a whole.
    var key: String?
    /// 1-based; nil when unknown (a flag, or a file that could not be read).
    var line: Int?
    var column: Int?
    var reason: String

    init(
        file: String? = nil, flag: String? = nil, key: String?, line: Int? = nil, column: Int? = nil,
        reason: String
    ) {
        self.file = file
        self.flag = flag
        self.key = key
        self.line = line
        self.column = column
        self.reason = reason
    }

    /// `FILE:LINE:COLUMN: KEY: REASON`, or `--flag (KEY): REASON` for a flag. The file name and key
    /// (an unknown key is the file's own text) are escaped for the terminal (`TerminalText`).
    var description: String {
        var text = ""
        if let file {
            text += TerminalText.escaped(file)
            if let line {
                text += ":\(line)"
                if let column { text += ":\(column)" }
            }
            text += ": "
        }
        if let flag {
            text += flag
            if let key { text += " (\(TerminalText.escaped(key)))" }
            text += ": "
        } else if let key {
            // An unknown key is the file's text: escaped so it cannot drive the terminal.
            text += TerminalText.escaped(key) + ": "
        }
        return text + reason
    }
}

/// A configuration that cannot be used. It lists every problem found, in file order.
package struct ConfigurationError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Never empty.
    var problems: [ConfigurationProblem]

    init(_ problems: [ConfigurationProblem]) {
        precondition(!problems.isEmpty, "a configuration error needs a problem")
        self.problems = problems
    }

    init(_ problem: ConfigurationProblem) { self.init([problem]) }

    /// 64 (bad usage) when every problem is a flag's; 78 (bad configuration) when the file is involved.
    package var exitCode: Int32 {
        problems.allSatisfy { $0.flag != nil && $0.file == nil } ? 64 : 78
    }

    /// One problem per line.
    package var description: String { problems.map(\.description).joined(separator: "\n") }
}
