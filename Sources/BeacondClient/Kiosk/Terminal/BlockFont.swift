/// Large letters for the kiosk's headline: each glyph is 7 rows of pixels, drawn with the full
/// block "█" and scaled by whole cells (`xScale` columns and `yScale` rows per pixel). Only the
/// letters the headlines use are drawn ("GREEN", "YELLOW", "VSC", "SC", "RED FLAG", "EVACUATE",
/// "NO SIGNAL"), plus M, H, K and P; a headline with any other character has no block form and
/// the renderer writes it as plain text.
package enum BlockFont {
    /// Pixel rows in every glyph.
    package static let height = 7
    /// Blank pixel columns between two glyphs.
    package static let gap = 1
    /// The character a lit pixel is drawn with.
    package static let block: Character = "█"

    /// One glyph: `height` rows of equal width, `#` lit and `.` dark.
    static let glyphs: [Character: [String]] = [
        "A": [".###.", "#...#", "#...#", "#####", "#...#", "#...#", "#...#"],
        "C": [".####", "#....", "#....", "#....", "#....", "#....", ".####"],
        "D": ["####.", "#...#", "#...#", "#...#", "#...#", "#...#", "####."],
        "E": ["#####", "#....", "#....", "####.", "#....", "#....", "#####"],
        "F": ["#####", "#....", "#....", "####.", "#....", "#....", "#...."],
        "G": [".####", "#....", "#....", "#..##", "#...#", "#...#", ".####"],
        "H": ["#...#", "#...#", "#...#", "#####", "#...#", "#...#", "#...#"],
        "I": ["#####", "..#..", "..#..", "..#..", "..#..", "..#..", "#####"],
        "K": ["#...#", "#..#.", "#.#..", "##...", "#.#..", "#..#.", "#...#"],
        "L": ["#....", "#....", "#....", "#....", "#....", "#....", "#####"],
        "M": ["#...#", "##.##", "#.#.#", "#.#.#", "#...#", "#...#", "#...#"],
        "N": ["#...#", "##..#", "##..#", "#.#.#", "#..##", "#..##", "#...#"],
        "O": [".###.", "#...#", "#...#", "#...#", "#...#", "#...#", ".###."],
        "P": ["####.", "#...#", "#...#", "####.", "#....", "#....", "#...."],
        "R": ["####.", "#...#", "#...#", "####.", "#.#..", "#..#.", "#...#"],
        "S": [".####", "#....", "#....", ".###.", "....#", "....#", "####."],
        "T": ["#####", "..#..", "..#..", "..#..", "..#..", "..#..", "..#.."],
        "U": ["#...#", "#...#", "#...#", "#...#", "#...#", "#...#", ".###."],
        "V": ["#...#", "#...#", "#...#", "#...#", "#...#", ".#.#.", "..#.."],
        "W": ["#...#", "#...#", "#...#", "#.#.#", "#.#.#", "##.##", "#...#"],
        "Y": ["#...#", "#...#", ".#.#.", "..#..", "..#..", "..#..", "..#.."],
        " ": ["...", "...", "...", "...", "...", "...", "..."],
    ]

    /// True when every character of `text` has a glyph (and there is at least one).
    package static func canDraw(_ text: String) -> Bool {
        !text.isEmpty && text.allSatisfy { glyphs[$0] != nil }
    }

    /// Columns `text` takes at horizontal scale `xScale`; nil when a character has no glyph.
    package static func width(of text: String, xScale: Int) -> Int? {
        var pixels = 0
        for character in text {
            guard let glyph = glyphs[character], let first = glyph.first else { return nil }
            pixels += first.count
        }
        guard pixels > 0 else { return nil }
        return (pixels + gap * (text.count - 1)) * xScale
    }

    /// The rows of `text` drawn at the given scales: `height * yScale` strings of blocks and spaces,
    /// each `width(of:xScale:)` characters long; nil when a character has no glyph.
    package static func rows(_ text: String, xScale: Int, yScale: Int) -> [String]? {
        guard xScale > 0, yScale > 0 else { return nil }
        var glyphRows: [[String]] = []
        for character in text {
            guard let glyph = glyphs[character] else { return nil }
            glyphRows.append(glyph)
        }
        guard !glyphRows.isEmpty else { return nil }
        let spacing = String(repeating: " ", count: gap * xScale)
        var result: [String] = []
        result.reserveCapacity(height * yScale)
        for pixelRow in 0..<height {
            var line = ""
            for (index, glyph) in glyphRows.enumerated() {
                if index > 0 { line += spacing }
                for pixel in glyph[pixelRow] {
                    let cell: Character = pixel == "#" ? block : " "
                    line += String(repeating: cell, count: xScale)
                }
            }
            for _ in 0..<yScale { result.append(line) }
        }
        return result
    }
}
