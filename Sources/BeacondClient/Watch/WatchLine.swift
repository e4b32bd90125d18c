/// One row of `beacond watch`'s screen as styled pieces of text: measured in terminal cells on
/// the text alone, cut to the screen's width, and written with colours only when the terminal
/// has them (`TerminalCapabilities`), so the same row is the plain snapshot without a TTY.
package struct WatchLine: Hashable, Sendable {
    package enum Style: Hashable, Sendable {
        case plain
        /// Column headings.
        case heading
        /// A mode shown in its flag's colours (`KioskColors`).
        case flag(KioskView.Flag?)
        /// Something staff must notice: a contested beacon, a stale remote, a scanner down.
        case alert
        /// The RSSI bar: green when strong, yellow, red when weak.
        case bar(Int)
        case dim
    }

    package struct Span: Hashable, Sendable {
        package var text: String
        package var style: Style
    }

    package private(set) var spans: [Span] = []

    package init() {}

    package init(_ text: String, _ style: Style = .plain) {
        append(text, style)
    }

    /// Appends `text` (already made safe: `WatchLine.safe`) in `style`.
    package mutating func append(_ text: String, _ style: Style = .plain) {
        guard !text.isEmpty else { return }
        spans.append(Span(text: text, style: style))
    }

    package mutating func append(_ line: WatchLine) {
        spans += line.spans
    }

    /// The text without styles.
    package var text: String { spans.map(\.text).joined() }

    /// Cells the text takes.
    package var width: Int { spans.reduce(0) { $0 + Self.cells(of: $1.text) } }

    /// Cells `scalar` takes (`KioskCells.width`), printable ASCII without the Unicode lookup.
    static func cells(_ scalar: Unicode.Scalar) -> Int? {
        if scalar.value >= 0x20 && scalar.value < 0x7F { return 1 }
        return KioskCells.width(scalar)
    }

    /// Cells `text` takes; scalars that are never drawn count 0.
    static func cells(of text: String) -> Int {
        text.unicodeScalars.reduce(0) { $0 + (cells($1) ?? 0) }
    }

    /// Outside text made safe to show: control and bidi characters written as `\u{…}` escapes.
    package static func safe(_ text: String) -> String { TerminalText.escaped(text) }

    /// The row cut to `columns` cells (a "…" marks the cut) and, with `pad`, filled with spaces to
    /// exactly `columns`; with colours, each styled span is wrapped in its SGR sequence and a reset.
    /// Scalars that are never drawn (`KioskCells.width` nil) are dropped, so the width is exact.
    package func rendered(columns: Int, capabilities: TerminalCapabilities, pad: Bool) -> String {
        let columns = max(0, columns)
        let colours = capabilities.colors != .none
        // When the row is too wide, its text stops one cell early for the ellipsis.
        let cut = width > columns
        let budget = cut ? max(0, columns - 1) : columns
        var out = ""
        var used = 0
        spans: for span in spans {
            var piece = String.UnicodeScalarView()
            for scalar in span.text.unicodeScalars {
                guard let cells = Self.cells(scalar) else { continue }
                if used + cells > budget {
                    if !piece.isEmpty { out += styled(String(piece), span.style, colours, capabilities) }
                    break spans
                }
                piece.append(scalar)
                used += cells
            }
            if !piece.isEmpty { out += styled(String(piece), span.style, colours, capabilities) }
        }
        if cut, columns > 0 {
            out += "…"
            used += 1
        }
        if pad, used < columns { out += String(repeating: " ", count: columns - used) }
        return out
    }

    static let reset = "\u{1B}[0m"

    private func styled(_ text: String, _ style: Style, _ colours: Bool, _ capabilities: TerminalCapabilities)
        -> String
    {
        let sgr = colours ? Self.sgr(style, capabilities) : ""
        return sgr.isEmpty ? text : sgr + text + Self.reset
    }

    /// The SGR sequence for `style`; empty for plain text.
    static func sgr(_ style: Style, _ capabilities: TerminalCapabilities) -> String {
        switch style {
        case .plain: ""
        case .heading: "\u{1B}[0m\u{1B}[1m"
        case .dim: "\u{1B}[0m\u{1B}[2m"
        case .alert: capabilities.sgr(KioskColors.red) + "\u{1B}[1m"
        case .flag(let flag): capabilities.sgr(KioskColors.of(flag ?? .noSignal))
        case .bar(let level):
            level >= 60 ? "\u{1B}[0m\u{1B}[32m" : level >= 30 ? "\u{1B}[0m\u{1B}[33m" : "\u{1B}[0m\u{1B}[31m"
        }
    }
}
