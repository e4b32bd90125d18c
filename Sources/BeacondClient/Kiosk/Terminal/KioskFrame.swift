/// One full frame of the terminal kiosk, as bytes: a pure function of the view, the terminal's
/// size and colours, and the flash phase (docs/kiosk.md).
///
/// Every cell of the screen is written, in the flag's colours: the headline in block letters
/// (`BlockFont`, at the largest scale that fits, else as plain text), the details under it, and
/// the plain status on the bottom row, so screen readers and capture tools read the mode as text.
/// Each row starts with its own cursor position and colours, so the frame overwrites the whole
/// screen from the home position without clearing it first (no flicker) and a row scribbled over
/// by someone else is repaired by the next frame.
package enum KioskFrame {
    /// Sizes beyond these are drawn at these: a frame stays a few megabytes at most.
    package static let maxColumns = 1024
    package static let maxRows = 512
    /// The largest vertical scale of the block letters (rows per pixel).
    package static let maxScale = 4

    /// The bytes of the frame. `alternate`: the flash's second phase (white) when the view flashes.
    package static func render(
        _ view: KioskView, columns: Int, rows: Int, capabilities: TerminalCapabilities, alternate: Bool
    ) -> [UInt8] {
        let screen = lines(view, columns: columns, rows: rows)
        let colors = capabilities.sgr(KioskColors.of(view.flag, alternate: alternate && view.flashes))
        var frame = ""
        frame.reserveCapacity(screen.count * (colors.utf8.count + 12) + screen.reduce(0) { $0 + $1.utf8.count })
        if screen.isEmpty { frame += "\u{1B}[H" }
        for (index, line) in screen.enumerated() {
            frame += index == 0 ? "\u{1B}[H" : "\u{1B}[\(index + 1);1H"
            frame += colors
            frame += line
        }
        return Array(frame.utf8)
    }

    /// The screen's rows as text, each exactly `columns` cells wide (sizes clamped to 0 and to the
    /// maximums): the headline, the evacuation's guidance and the details centred, the status on
    /// the last row. An evacuation with a configured exit draws its arrow on the left, as large as
    /// the screen allows, with the words beside it, or, when the headline's block letters do not
    /// fit beside it, the headline across the top and a smaller arrow below it. Where no block
    /// arrow fits, the guidance starts with the arrow's character.
    package static func lines(_ view: KioskView, columns: Int, rows: Int) -> [String] {
        let columns = min(max(columns, 0), maxColumns)
        let rows = min(max(rows, 0), maxRows)
        guard rows > 0 else { return [] }
        let body = rows - 1
        let status = KioskCells.centred(view.status, columns: columns)
        var view = view
        guard let direction = view.arrow else {
            return textColumn(view, columns: columns, body: body) + [status]
        }
        guard let arrow = arrowBlock(direction, columns: columns, body: body) else {
            if !view.guidance.isEmpty { view.guidance[0] = direction.character + " " + view.guidance[0] }
            return textColumn(view, columns: columns, body: body) + [status]
        }
        let lineCount = view.guidance.count + view.details.count
        let beside = blockHeadline(
            view.headline, columns: columns - (arrow.first?.count ?? 0) - 2 * arrowMargin, body: body,
            detailCount: lineCount)
        let aboveRoom = body - BlockArrow.size - 1
        if beside == nil, aboveRoom >= BlockFont.height,
            let above = blockHeadline(view.headline, columns: columns, body: aboveRoom, detailCount: 0),
            let lower = arrowBlock(direction, columns: columns, body: body - above.count - 1)
        {
            var text = view
            text.headline = ""
            let top = above.map { KioskCells.centred($0, columns: columns) }
            let rest = arrowBeside(lower, text, columns: columns, body: body - above.count - 1)
            return top + [KioskCells.centred("", columns: columns)] + rest + [status]
        }
        return arrowBeside(arrow, view, columns: columns, body: body) + [status]
    }

    /// Cells on each side of the arrow.
    static let arrowMargin = 2

    /// `body` rows: `arrow` on the left, centred in height, and the view's words beside it.
    static func arrowBeside(_ arrow: [String], _ view: KioskView, columns: Int, body: Int) -> [String] {
        let arrowWidth = arrow.first?.count ?? 0
        let margin = String(repeating: " ", count: arrowMargin)
        let text = textColumn(view, columns: columns - arrowWidth - 2 * arrowMargin, body: body)
        let top = (body - arrow.count) / 2
        let blank = String(repeating: " ", count: arrowWidth)
        return text.enumerated().map { index, line in
            margin + (index >= top && index - top < arrow.count ? arrow[index - top] : blank) + margin + line
        }
    }

    /// The arrow at the largest scale that fits in the body's height and under half its width,
    /// leaving at least `minTextColumns` for the words; nil when even the smallest does not fit.
    static func arrowBlock(_ direction: BlockArrow.Direction, columns: Int, body: Int) -> [String]? {
        let maxWidth = columns * 45 / 100
        guard columns - maxWidth >= minTextColumns else { return nil }
        for yScale in stride(from: body / BlockArrow.size, through: 1, by: -1) {
            for xScale in stride(from: 2 * yScale, through: yScale, by: -1) where BlockArrow.size * xScale <= maxWidth {
                return BlockArrow.rows(direction, xScale: xScale, yScale: yScale)
            }
        }
        return nil
    }

    /// The fewest columns the words beside an arrow get.
    static let minTextColumns = 24

    /// `body` rows of `columns` cells: the headline (block letters when they fit, on two lines when
    /// one is too wide, else text), then the guidance and details, centred.
    static func textColumn(_ view: KioskView, columns: Int, body: Int) -> [String] {
        guard body > 0 else { return [] }
        var content = Array(repeating: "", count: body)
        let lines = (view.guidance + view.details).map { KioskText.stripped($0, limit: KioskView.detailLimit) }
            .filter { !$0.isEmpty }
        let headline =
            view.headline.isEmpty
            ? []
            : blockHeadline(view.headline, columns: columns, body: body, detailCount: lines.count) ?? [view.headline]
        let room = body - headline.count
        let shown = headline.isEmpty ? min(lines.count, room) : room >= 2 ? min(lines.count, room - 1) : 0
        let height = headline.count + (shown > 0 ? (headline.isEmpty ? 0 : 1) + shown : 0)
        var row = max(0, (body - height) / 2)
        for line in headline.prefix(body) {
            content[row] = line
            row += 1
        }
        if shown > 0 {
            if !headline.isEmpty { row += 1 }
            for line in lines.prefix(shown) {
                content[row] = line
                row += 1
            }
        }
        return content.map { KioskCells.centred($0, columns: columns) }
    }

    /// The headline in block letters at the largest scale that leaves room for the details (at
    /// scale 1 the letters win and the details take what is left): on one line, else split at a
    /// space onto two (the split with the shorter longest line); nil when none fits.
    static func blockHeadline(_ text: String, columns: Int, body: Int, detailCount: Int) -> [String]? {
        guard BlockFont.canDraw(text) else { return nil }
        var layouts: [[String]] = [[text]]
        let words = text.split(separator: " ")
        if words.count > 1 {
            let splits = (1..<words.count).map { cut in
                [words[..<cut].joined(separator: " "), words[cut...].joined(separator: " ")]
            }
            if let best = splits.min(by: { ($0.map(\.count).max() ?? 0) < ($1.map(\.count).max() ?? 0) }) {
                layouts.append(best)
            }
        }
        for yScale in stride(from: maxScale, through: 1, by: -1) {
            for layout in layouts {
                let letters = layout.count * BlockFont.height * yScale + (layout.count - 1) * yScale
                let detailRows = yScale == 1 || detailCount == 0 ? 0 : 1 + detailCount
                guard letters + detailRows <= body else { continue }
                // Terminal cells are about twice as tall as wide: up to two columns per pixel row.
                for xScale in stride(from: 2 * yScale, through: yScale, by: -1) {
                    let widths = layout.map { BlockFont.width(of: $0, xScale: xScale) ?? .max }
                    guard (widths.max() ?? .max) + 2 <= columns else { continue }
                    var rows: [String] = []
                    for (index, line) in layout.enumerated() {
                        if index > 0 { rows += Array(repeating: "", count: yScale) }
                        rows += BlockFont.rows(line, xScale: xScale, yScale: yScale) ?? []
                    }
                    return rows
                }
            }
        }
        return nil
    }
}

/// Text measured in terminal cells.
package enum KioskCells {
    /// Cells `scalar` takes: 0 for combining marks, 2 for wide (East Asian, emoji) characters, 1
    /// otherwise; nil for what is never drawn: controls, bidi controls, separators, format
    /// characters and unassigned code points.
    package static func width(_ scalar: Unicode.Scalar) -> Int? {
        if KioskText.isHidden(scalar) { return nil }
        switch scalar.properties.generalCategory {
        case .nonspacingMark, .enclosingMark: return 0
        default: break
        }
        return isWide(scalar.value) ? 2 : 1
    }

    /// `text` without the scalars that are never drawn, cut to `columns` cells (a trailing "…"
    /// marks the cut), centred, and padded with spaces to exactly `columns` cells.
    package static func centred(_ text: String, columns: Int) -> String {
        guard columns > 0 else { return "" }
        var kept = String.UnicodeScalarView()
        var used = 0
        var cut = false
        var widthBeforeLast: [Int] = []
        for scalar in text.unicodeScalars {
            guard let width = width(scalar) else { continue }
            if used + width > columns {
                cut = true
                break
            }
            kept.append(scalar)
            widthBeforeLast.append(used)
            used += width
        }
        if cut {
            // Make room for the ellipsis: drop scalars from the end until one cell is free.
            while used > columns - 1, let before = widthBeforeLast.popLast() {
                kept.removeLast()
                used = before
            }
            kept.append("…")
            used += 1
        }
        let left = (columns - used) / 2
        let right = columns - used - left
        return String(repeating: " ", count: left) + String(kept) + String(repeating: " ", count: right)
    }

    /// Cells `text` takes, drawn as `centred` would keep it.
    package static func width(of text: String) -> Int {
        text.unicodeScalars.reduce(0) { $0 + (width($1) ?? 0) }
    }

    private static func isWide(_ value: UInt32) -> Bool {
        switch value {
        case 0x1100...0x115F, 0x231A...0x231B, 0x2329...0x232A, 0x23E9...0x23EC, 0x23F0, 0x23F3,
            0x25FD...0x25FE, 0x2614...0x2615, 0x2648...0x2653, 0x267F, 0x2693, 0x26A1, 0x26AA...0x26AB,
            0x26BD...0x26BE, 0x26C4...0x26C5, 0x26CE, 0x26D4, 0x26EA, 0x26F2...0x26F3, 0x26F5, 0x26FA,
            0x26FD, 0x2705, 0x270A...0x270B, 0x2728, 0x274C, 0x274E, 0x2753...0x2755, 0x2757,
            0x2795...0x2797, 0x27B0, 0x27BF, 0x2B1B...0x2B1C, 0x2B50, 0x2B55, 0x2E80...0x303E,
            0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF, 0xA000...0xA4CF, 0xA960...0xA97F,
            0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE10...0xFE19, 0xFE30...0xFE6F, 0xFF00...0xFF60,
            0xFFE0...0xFFE6, 0x1F004, 0x1F0CF, 0x1F18E, 0x1F191...0x1F19A, 0x1F200...0x1F2FF,
            0x1F300...0x1F64F, 0x1F680...0x1F6FF, 0x1F7E0...0x1F7EB, 0x1F900...0x1F9FF,
            0x1FA70...0x1FAFF, 0x20000...0x2FFFD, 0x30000...0x3FFFD:
            true
        default:
            false
        }
    }
}
