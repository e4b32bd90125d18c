import Yams

/// Bounds on a config file's YAML, checked before any value is read, so a hostile file costs bounded
/// time and memory (and exits 78, or keeps the running configuration on reload).
///
/// The schema never needs YAML anchors (`&name`) or aliases (`*name`), and aliases are what turn a
/// few hundred bytes into billions of nodes ("billion laughs"): Yams substitutes each alias with the
/// whole anchored node, and hashing or converting the result is exponential. So anchors and aliases
/// are refused outright, by a scan of the text before Yams composes anything (Yams hashes mapping
/// keys while composing), and again on the composed tree, whose nodes are also counted up to a cap.
enum YAMLBounds {
    /// The most nodes (scalars, lists, mappings) a config file may have; far above any real file
    /// (a long `fusion.allow` list), far below anything that costs noticeable time or memory.
    static let maxNodes = 100_000

    /// Line breaks as libyaml counts them.
    private static func isBreak(_ scalar: Unicode.Scalar) -> Bool {
        scalar == "\n" || scalar == "\r" || scalar.value == 0x85 || scalar.value == 0x2028 || scalar.value == 0x2029
    }

    /// What may stand right before an anchor or alias token: YAML separates them from what precedes
    /// them by white space or a flow indicator (`:` too, for JSON-like `"key":*alias`).
    private static func separates(_ scalar: Unicode.Scalar?) -> Bool {
        guard let scalar else { return true }
        return scalar == " " || scalar == "\t" || scalar == "[" || scalar == "{" || scalar == "," || scalar == ":"
            || scalar.value == 0xFEFF || isBreak(scalar)
    }

    /// The first `&name` or `*name` token in `text`, as a problem, or nil.
    ///
    /// The scan may refuse more than YAML would read as an anchor or alias (a quoted `"a *b"`), never
    /// less: it skips nothing but comments, and a comment only when the rest of its line holds no
    /// quote (so a `#` inside a quoted string cannot hide what follows the string).
    static func anchorOrAlias(in text: String, file: String) -> ConfigurationProblem? {
        let scalars = Array(text.unicodeScalars)
        var line = 1
        var column = 1
        var previous: Unicode.Scalar?
        var index = 0
        while index < scalars.count {
            let scalar = scalars[index]
            if isBreak(scalar) {
                if !(scalar == "\n" && previous == "\r") { line += 1 }
                column = 1
                previous = scalar
                index += 1
                continue
            }
            if scalar == "#" && separates(previous) {
                var end = index
                while end < scalars.count && !isBreak(scalars[end]) { end += 1 }
                if !scalars[index..<end].contains(where: { $0 == "\"" || $0 == "'" }) {
                    column += end - index
                    previous = scalar
                    index = end
                    continue
                }
            }
            if (scalar == "&" || scalar == "*") && separates(previous) && index + 1 < scalars.count {
                let next = scalars[index + 1]
                if next != " " && next != "\t" && !isBreak(next) {
                    let kind = scalar == "&" ? "anchors (&name)" : "aliases (*name)"
                    return ConfigurationProblem(
                        file: file, key: nil, line: line, column: column,
                        reason: "YAML \(kind) are not accepted in a config file (no key needs anchors or aliases)")
                }
            }
            column += 1
            previous = scalar
            index += 1
        }
        return nil
    }

    /// Counts the composed tree's nodes up to `maxNodes` and refuses any anchored node. Stops at the
    /// first anchor, so no shared (aliased) subtree is ever walked: the walk is linear in the text.
    static func check(_ root: Node, file: String) -> ConfigurationProblem? {
        var pending = [root]
        var count = 0
        while let node = pending.popLast() {
            count += 1
            if count > maxNodes {
                return ConfigurationProblem(
                    file: file, key: nil, line: node.mark?.line, column: node.mark?.column,
                    reason: "more than \(maxNodes) YAML nodes; a config file needs far fewer")
            }
            if node.anchor != nil {
                return ConfigurationProblem(
                    file: file, key: nil, line: node.mark?.line, column: node.mark?.column,
                    reason: "YAML anchors (&name) are not accepted in a config file (no key needs anchors or aliases)")
            }
            switch node {
            case .scalar, .alias: break
            case .sequence(let sequence): pending.append(contentsOf: sequence.reversed())
            case .mapping(let mapping):
                for (key, value) in mapping.reversed() {
                    pending.append(value)
                    pending.append(key)
                }
            }
        }
        return nil
    }
}
