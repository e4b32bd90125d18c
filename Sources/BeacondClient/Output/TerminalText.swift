/// Makes text from outside (the network, the air, files, clients) safe to print on a terminal or to log.
///
/// Escaped as `\u{…}` (lowercase hex): C0 controls, DEL and C1 controls (ESC, BEL, CR, LF …), which
/// could start a line or drive a terminal; the bidi embedding, override and isolate controls
/// (U+202A–202E, U+2066–2069), which could make a line read differently from what it holds; and the
/// line and paragraph separators (U+2028, U+2029), which some viewers break lines on.
package enum TerminalText {
    /// Log lines keep at most this many bytes of one piece of outside text.
    package static let logLimit = 512

    /// Marks where `escaped(_:limit:)` cut the text.
    package static let ellipsis = "…"

    /// `text` with every unsafe scalar written as a `\u{…}` escape.
    package static func escaped(_ text: String) -> String {
        var result = ""
        for scalar in text.unicodeScalars {
            appendEscaped(scalar, to: &result)
        }
        return result
    }

    /// `escaped(text)`, cut to at most `limit` UTF-8 bytes plus a trailing `…` when it is longer. The
    /// cut falls between whole scalars and never inside an escape, so the result stays valid UTF-8
    /// and every escape stays readable. For log lines: `TerminalText.escaped(message, limit: 512)`.
    package static func escaped(_ text: String, limit: Int) -> String {
        var result = ""
        var bytes = 0
        var piece = ""
        for scalar in text.unicodeScalars {
            piece.removeAll(keepingCapacity: true)
            appendEscaped(scalar, to: &piece)
            bytes += piece.utf8.count
            if bytes > limit { return result + ellipsis }
            result += piece
        }
        return result
    }

    /// `escaped(text, limit: logLimit)`: one piece of outside text in a log line.
    package static func logged(_ text: String) -> String { escaped(text, limit: logLimit) }

    /// True for the scalars `escaped` rewrites.
    package static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00..<0x20, 0x7F...0x9F: true
        case 0x202A...0x202E, 0x2066...0x2069: true
        case 0x2028, 0x2029: true
        default: false
        }
    }

    private static func appendEscaped(_ scalar: Unicode.Scalar, to result: inout String) {
        if needsEscape(scalar) {
            result += "\\u{\(String(scalar.value, radix: 16))}"
        } else {
            result.unicodeScalars.append(scalar)
        }
    }

    /// `text` in double quotes, escaped, cut to `maxLength` characters with "…": how a refused
    /// value is shown in an error.
    package static func quoted(_ text: String, maxLength: Int = 60) -> String {
        var shown = text
        if shown.count > maxLength { shown = String(shown.prefix(maxLength)) + "…" }
        return "\"" + escaped(shown) + "\""
    }
}
