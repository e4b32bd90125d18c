import Foundation

/// A table of `WatchLine` cells laid out to a width: columns as wide as their widest cell (up to
/// each column's cap), two spaces apart, or one when that is what fits; when even that is too
/// wide, the least important columns are left out, and the row is cut as a last resort.
struct WatchTable {
    struct Column {
        var title: String
        var rightAligned = false
        /// The widest a cell is shown; longer ones are cut with "…".
        var maxWidth = 40
        /// Columns with the lowest `keep` are left out first when the table is too wide.
        var keep: Int
        var cells: [WatchLine] = []
    }

    var columns: [Column]

    /// The heading and the rows, fitted to `width` cells.
    func lines(width: Int) -> [WatchLine] {
        var shown = columns
        var widths = shown.map(Self.width)
        var gap = 2
        while true {
            let total = widths.reduce(0, +) + gap * max(0, widths.count - 1)
            if total <= width { break }
            if gap == 2 {
                gap = 1
                continue
            }
            guard shown.count > 1, let drop = shown.indices.min(by: { shown[$0].keep < shown[$1].keep }) else { break }
            shown.remove(at: drop)
            widths.remove(at: drop)
        }
        let rowCount = shown.map(\.cells.count).max() ?? 0
        var heading = WatchLine()
        for (index, column) in shown.enumerated() {
            if index > 0 { heading.append(String(repeating: " ", count: gap)) }
            heading.append(WatchLine(column.title, .heading).fitted(widths[index], rightAligned: column.rightAligned))
        }
        var lines = [heading]
        for row in 0..<rowCount {
            var line = WatchLine()
            for (index, column) in shown.enumerated() {
                if index > 0 { line.append(String(repeating: " ", count: gap)) }
                let cell = row < column.cells.count ? column.cells[row] : WatchLine()
                line.append(cell.fitted(widths[index], rightAligned: column.rightAligned))
            }
            lines.append(line)
        }
        return lines
    }

    private static func width(_ column: Column) -> Int {
        let title = WatchLine.cells(of: column.title)
        let widest = column.cells.reduce(title) { max($0, $1.width) }
        return min(widest, max(column.maxWidth, title))
    }
}

extension WatchLine {
    /// Exactly `width` cells: cut with "…" when longer, padded with spaces (before it when
    /// right-aligned) when shorter.
    func fitted(_ width: Int, rightAligned: Bool) -> WatchLine {
        let width = max(0, width)
        let current = self.width
        if current == width { return self }
        if current < width {
            let padding = String(repeating: " ", count: width - current)
            var line = WatchLine()
            if rightAligned {
                line.append(padding)
                line.append(self)
            } else {
                line.append(self)
                line.append(padding)
            }
            return line
        }
        guard width > 0 else { return WatchLine() }
        var line = WatchLine()
        var used = 0
        var lastStyle = Style.plain
        for span in spans {
            var kept = String.UnicodeScalarView()
            for scalar in span.text.unicodeScalars {
                guard let cells = WatchLine.cells(scalar) else { continue }
                guard used + cells <= width - 1 else { break }
                kept.append(scalar)
                used += cells
            }
            line.append(String(kept), span.style)
            lastStyle = span.style
            if used >= width - 1 { break }
        }
        line.append("…", lastStyle)
        used += 1
        if used < width { line.append(String(repeating: " ", count: width - used)) }
        return line
    }
}

/// Numbers as the watch shows them; anything not finite (the status may come from any socket) is "-".
enum WatchFormat {
    /// Seconds with one decimal below 100, whole above: `0.4s`, `12.3s`, `255s`.
    static func seconds(_ value: Double?) -> String {
        guard let value, value.isFinite else { return "-" }
        let seconds = max(0, value)
        if seconds < 100 { return String(format: "%.1fs", seconds) }
        if seconds < 1e9 { return String(format: "%.0fs", seconds) }
        return ">1e9s"
    }

    /// Metres: `1.2 m`, `35.0 m`, `>999 m`.
    static func metres(_ value: Double?) -> String {
        guard let value, value.isFinite else { return "-" }
        if value >= 999.95 { return ">999 m" }
        return String(format: "%.1f m", max(0, value))
    }

    /// A bar of `barCells` cells for an RSSI: empty at -100 dBm and below, full at -40 and above,
    /// in eighths of a cell. Nil RSSI: all blank.
    static func bar(rssi: Int?) -> String {
        let eighths = barCells * 8 * barLevel(rssi: rssi) / 100
        let full = eighths / 8
        let partial = eighths % 8
        var bar = String(repeating: "█", count: full)
        if partial > 0 { bar += String(partialBlocks[partial]) }
        return bar + String(repeating: " ", count: barCells - full - (partial > 0 ? 1 : 0))
    }

    static let barCells = 5
    private static let partialBlocks: [Character] = [" ", "▏", "▎", "▍", "▌", "▋", "▊", "▉"]

    /// 0…100: how full the bar is.
    static func barLevel(rssi: Int?) -> Int {
        guard let rssi else { return 0 }
        // Clamped first: the number comes from a socket.
        let dBm = min(-40, max(-100, rssi))
        return (dBm + 100) * 100 / 60
    }
}
