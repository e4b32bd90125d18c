import Yams

/// Where a key repeats in a block mapping, for the error to point at the line to fix: Yams names
/// only the first occurrence.
enum YAMLDuplicateKey {
    /// The line and column (1-based) of the next key `name` after `first` at the same indentation
    /// in the same block mapping (plain, single- or double-quoted); nil when there is none (a flow
    /// mapping, or a spelling this does not read), and the caller falls back to `first`.
    static func repeated(_ name: String, first: Mark, in text: String) -> (line: Int, column: Int)? {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        guard first.line >= 1, first.line <= lines.count else { return nil }
        let indent = indentation(lines[first.line - 1])
        for index in first.line..<lines.count {
            let line = lines[index]
            let body = line.drop { $0 == " " }
            if body.isEmpty || body.hasPrefix("#") { continue }
            let column = indentation(line)
            if column < indent { return nil }
            if column == indent, startsWithKey(body, name) { return (index + 1, column + 1) }
        }
        return nil
    }

    private static func indentation(_ line: Substring) -> Int { line.prefix { $0 == " " }.count }

    private static func startsWithKey(_ body: Substring, _ name: String) -> Bool {
        for spelling in [name, "\"\(name)\"", "'\(name)'"] where body.hasPrefix(spelling) {
            let rest = body.dropFirst(spelling.count).drop { $0 == " " || $0 == "\t" }
            if rest.hasPrefix(":") { return true }
        }
        return false
    }
}
