/// Large letters for the kiosk's headline: each glyph is 7 rows of pixels, drawn with the full
/// block "█" and scaled by whole cells (`xScale` columns and `yScale` rows per pixel). The glyphs
/// cover the uppercase headlines of every language the kiosk speaks (Spanish, Catalan, English,
/// French, German, Italian, Portuguese) and Latin-1's other capitals: A–Z; Á À Â Ä Ã Å Æ Ç É È Ê Ë
/// Í Ì Î Ï Ñ Ó Ò Ô Ö Õ Ø Œ Ú Ù Û Ü Ý Ÿ, ß and ẞ; the digits 0–9; the space and - . , : ; ' ’ ! ? / ( )
/// and the middle dot · (L·L). A headline with any other character (a lowercase letter, say) has no
/// block form and the renderer writes it as plain text.
package enum BlockFont {
    /// Pixel rows in every glyph.
    package static let height = 7
    /// Blank pixel columns between two glyphs.
    package static let gap = 1
    /// The character a lit pixel is drawn with.
    package static let block: Character = "█"

    /// One glyph: `height` rows of equal width, `#` lit and `.` dark.
    static let glyphs: [Character: [String]] = [
        // A–Z.
        "A": [".###.", "#...#", "#...#", "#####", "#...#", "#...#", "#...#"],
        "B": ["####.", "#...#", "#...#", "####.", "#...#", "#...#", "####."],
        "C": [".####", "#....", "#....", "#....", "#....", "#....", ".####"],
        "D": ["####.", "#...#", "#...#", "#...#", "#...#", "#...#", "####."],
        "E": ["#####", "#....", "#....", "####.", "#....", "#....", "#####"],
        "F": ["#####", "#....", "#....", "####.", "#....", "#....", "#...."],
        "G": [".####", "#....", "#....", "#..##", "#...#", "#...#", ".####"],
        "H": ["#...#", "#...#", "#...#", "#####", "#...#", "#...#", "#...#"],
        "I": ["#####", "..#..", "..#..", "..#..", "..#..", "..#..", "#####"],
        "J": ["..###", "...#.", "...#.", "...#.", "...#.", "#..#.", ".##.."],
        "K": ["#...#", "#..#.", "#.#..", "##...", "#.#..", "#..#.", "#...#"],
        "L": ["#....", "#....", "#....", "#....", "#....", "#....", "#####"],
        "M": ["#...#", "##.##", "#.#.#", "#.#.#", "#...#", "#...#", "#...#"],
        "N": ["#...#", "##..#", "##..#", "#.#.#", "#..##", "#..##", "#...#"],
        "O": [".###.", "#...#", "#...#", "#...#", "#...#", "#...#", ".###."],
        "P": ["####.", "#...#", "#...#", "####.", "#....", "#....", "#...."],
        "Q": [".###.", "#...#", "#...#", "#...#", "#.#.#", "#..#.", ".##.#"],
        "R": ["####.", "#...#", "#...#", "####.", "#.#..", "#..#.", "#...#"],
        "S": [".####", "#....", "#....", ".###.", "....#", "....#", "####."],
        "T": ["#####", "..#..", "..#..", "..#..", "..#..", "..#..", "..#.."],
        "U": ["#...#", "#...#", "#...#", "#...#", "#...#", "#...#", ".###."],
        "V": ["#...#", "#...#", "#...#", "#...#", "#...#", ".#.#.", "..#.."],
        "W": ["#...#", "#...#", "#...#", "#.#.#", "#.#.#", "##.##", "#...#"],
        "X": ["#...#", "#...#", ".#.#.", "..#..", ".#.#.", "#...#", "#...#"],
        "Y": ["#...#", "#...#", ".#.#.", "..#..", "..#..", "..#..", "..#.."],
        "Z": ["#####", "....#", "...#.", "..#..", ".#...", "#....", "#####"],
        // Accented capitals by base letter: the accent in the top row and the letter in the 6 rows below
        // (Ç: the C in the 6 rows above its cedilla). On E's bar and on the open tops of N, U and Y, an acute
        // is a dot right of the middle, a grave left of it, a circumflex in the middle, a diaeresis two dots
        // and a tilde a bar. On the round or narrowed tops of A, I and O, acute and grave are two pixels
        // reaching past the corner, the diaeresis sits on the corners, the circumflex makes a peak and the
        // tilde a bar across the width. Å draws its ring on a shorter A; Ø has a slash.
        "Á": ["...##", ".###.", "#...#", "#...#", "#####", "#...#", "#...#"],
        "À": ["##...", ".###.", "#...#", "#...#", "#####", "#...#", "#...#"],
        "Â": ["..#..", ".###.", "#...#", "#...#", "#####", "#...#", "#...#"],
        "Ä": ["#...#", ".###.", "#...#", "#...#", "#####", "#...#", "#...#"],
        "Ã": ["#####", ".###.", "#...#", "#...#", "#####", "#...#", "#...#"],
        "Å": [".###.", ".#.#.", ".###.", "#...#", "#####", "#...#", "#...#"],
        "Æ": [".####", "#.#..", "#.#..", "#####", "#.#..", "#.#..", "#.###"],
        "Ç": [".####", "#....", "#....", "#....", "#....", ".####", "..#.."],
        "É": ["...#.", "#####", "#....", "####.", "#....", "#....", "#####"],
        "È": [".#...", "#####", "#....", "####.", "#....", "#....", "#####"],
        "Ê": ["..#..", "#####", "#....", "####.", "#....", "#....", "#####"],
        "Ë": [".#.#.", "#####", "#....", "####.", "#....", "#....", "#####"],
        "Í": ["...##", ".###.", "..#..", "..#..", "..#..", "..#..", ".###."],
        "Ì": ["##...", ".###.", "..#..", "..#..", "..#..", "..#..", ".###."],
        "Î": ["..#..", ".###.", "..#..", "..#..", "..#..", "..#..", ".###."],
        "Ï": ["#...#", ".###.", "..#..", "..#..", "..#..", "..#..", ".###."],
        "Ñ": [".###.", "#...#", "##..#", "#.#.#", "#.#.#", "#..##", "#...#"],
        "Ó": ["...##", ".###.", "#...#", "#...#", "#...#", "#...#", ".###."],
        "Ò": ["##...", ".###.", "#...#", "#...#", "#...#", "#...#", ".###."],
        "Ô": ["..#..", ".###.", "#...#", "#...#", "#...#", "#...#", ".###."],
        "Ö": ["#...#", ".###.", "#...#", "#...#", "#...#", "#...#", ".###."],
        "Õ": ["#####", ".###.", "#...#", "#...#", "#...#", "#...#", ".###."],
        "Ø": [".###.", "#...#", "#..##", "#.#.#", "##..#", "#...#", ".###."],
        "Œ": [".####", "#.#..", "#.#..", "#.###", "#.#..", "#.#..", ".####"],
        "ß": [".###.", "#...#", "#..#.", "#.##.", "#...#", "#...#", "#.##."],
        "ẞ": ["#####", "#..#.", "#.#..", "#.##.", "#...#", "#...#", "#.##."],
        "Ú": ["...#.", "#...#", "#...#", "#...#", "#...#", "#...#", ".###."],
        "Ù": [".#...", "#...#", "#...#", "#...#", "#...#", "#...#", ".###."],
        "Û": ["..#..", "#...#", "#...#", "#...#", "#...#", "#...#", ".###."],
        "Ü": [".#.#.", "#...#", "#...#", "#...#", "#...#", "#...#", ".###."],
        "Ý": ["...#.", "#...#", "#...#", ".#.#.", "..#..", "..#..", "..#.."],
        "Ÿ": [".#.#.", "#...#", "#...#", ".#.#.", "..#..", "..#..", "..#.."],
        // Digits: 0 has a dot (O has none, Ø a slash); 1 has a flag and a foot (I has bars); 2 and 5 have a round
        // and a flat top (Z and S the other way round).
        "0": [".###.", "#...#", "#...#", "#.#.#", "#...#", "#...#", ".###."],
        "1": ["..#..", ".##..", "..#..", "..#..", "..#..", "..#..", ".###."],
        "2": [".###.", "#...#", "....#", "...#.", "..#..", ".#...", "#####"],
        "3": [".###.", "#...#", "....#", "..##.", "....#", "#...#", ".###."],
        "4": ["...#.", "..##.", ".#.#.", "#..#.", "#####", "...#.", "...#."],
        "5": ["#####", "#....", "####.", "....#", "....#", "#...#", ".###."],
        "6": ["..##.", ".#...", "#....", "####.", "#...#", "#...#", ".###."],
        "7": ["#####", "....#", "...#.", "..#..", ".#...", ".#...", ".#..."],
        "8": [".###.", "#...#", "#...#", ".###.", "#...#", "#...#", ".###."],
        "9": [".###.", "#...#", "#...#", ".####", "....#", "...#.", ".##.."],
        // Space and punctuation, as narrow as the mark: ’ is a raised comma; the middle dot (L·L) sits mid-height.
        " ": ["...", "...", "...", "...", "...", "...", "..."],
        "-": ["....", "....", "....", "####", "....", "....", "...."],
        ".": [".", ".", ".", ".", ".", ".", "#"],
        ",": ["..", "..", "..", "..", "..", ".#", "#."],
        ":": [".", ".", "#", ".", ".", ".", "#"],
        ";": ["..", "..", ".#", "..", "..", ".#", "#."],
        "'": ["#", "#", ".", ".", ".", ".", "."],
        "\u{2019}": [".#", "#.", "..", "..", "..", "..", ".."],
        "!": ["#", "#", "#", "#", "#", ".", "#"],
        "?": [".###.", "#...#", "....#", "...#.", "..#..", ".....", "..#.."],
        "/": ["....#", "....#", "...#.", "..#..", ".#...", "#....", "#...."],
        "(": ["..#", ".#.", "#..", "#..", "#..", ".#.", "..#"],
        ")": ["#..", ".#.", "..#", "..#", "..#", ".#.", "#.."],
        "\u{00B7}": [".", ".", ".", "#", ".", ".", "."],
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
