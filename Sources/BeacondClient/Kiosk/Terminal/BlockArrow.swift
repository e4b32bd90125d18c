/// Large arrows for the terminal kiosk's evacuation view, which draws the arrow to the exit beside or
/// above the headline. An arrow is a square bitmap of `size` × `size` pixels drawn with the full block
/// "█" and scaled by whole cells, like `BlockFont`'s letters: bold, with a wide head and a thick shaft,
/// so that it reads at a glance from across a room. The eight directions are GeoRacing's
/// `arrow_direction` values. Two arrows are drawn by hand, up and up-right (a true diagonal, its tip in
/// the corner); the other six are those two turned by quarter turns clockwise, once, at first use.
package enum BlockArrow {
    /// The way to the exit, as GeoRacing's `arrow_direction` names it.
    package enum Direction: String, CaseIterable, Sendable, Hashable {
        case up
        case upRight = "up_right"
        case right
        case downRight = "down_right"
        case down
        case downLeft = "down_left"
        case left
        case upLeft = "up_left"

        /// The hand-drawn arrow this one is turned from, and by how many quarter turns clockwise.
        var drawing: (bitmap: [String], quarterTurns: Int) {
            switch self {
            case .up: (BlockArrow.straight, 0)
            case .upRight: (BlockArrow.diagonal, 0)
            case .right: (BlockArrow.straight, 1)
            case .downRight: (BlockArrow.diagonal, 1)
            case .down: (BlockArrow.straight, 2)
            case .downLeft: (BlockArrow.diagonal, 2)
            case .left: (BlockArrow.straight, 3)
            case .upLeft: (BlockArrow.diagonal, 3)
            }
        }
    }

    /// Pixels along each side of every arrow.
    package static let size = 13

    /// The arrow up, `#` lit and `.` dark: a head as wide as the square and a shaft 5 pixels wide.
    static let straight = [
        "......#......",
        ".....###.....",
        "....#####....",
        "...#######...",
        "..#########..",
        ".###########.",
        "#############",
        "....#####....",
        "....#####....",
        "....#####....",
        "....#####....",
        "....#####....",
        "....#####....",
    ]

    /// The arrow up and to the right: the up arrow's head turned 45° (its sides along the top and the right
    /// edge, its tip in the corner) and a shaft 5 pixels thick across the diagonal, to the opposite corner.
    static let diagonal = [
        "....#########",
        ".....########",
        "......#######",
        ".......######",
        "......#######",
        ".....########",
        "....#####.###",
        "...#####...##",
        "..#####.....#",
        ".#####.......",
        "#####........",
        "####.........",
        "###..........",
    ]

    /// Every direction's bitmap: `size` rows of `size` pixels, `#` lit and `.` dark.
    static let bitmaps: [Direction: [String]] = {
        var result: [Direction: [String]] = [:]
        for direction in Direction.allCases {
            let drawing = direction.drawing
            var bitmap = drawing.bitmap
            for _ in 0..<drawing.quarterTurns { bitmap = turnedClockwise(bitmap) }
            result[direction] = bitmap
        }
        return result
    }()

    /// `bitmap` turned a quarter turn clockwise: row r, column c comes from row size-1-c, column r
    /// (the top row becomes the right column, and an arrow up one to the right).
    static func turnedClockwise(_ bitmap: [String]) -> [String] {
        let pixels = bitmap.map(Array.init)
        return (0..<size).map { row in
            String((0..<size).map { column in pixels[size - 1 - column][row] })
        }
    }

    /// The rows of the arrow to `direction` drawn at the given scales: `size * yScale` strings of blocks
    /// and spaces, each `size * xScale` characters long; empty when a scale is not positive.
    package static func rows(_ direction: Direction, xScale: Int, yScale: Int) -> [String] {
        guard xScale > 0, yScale > 0, let bitmap = bitmaps[direction] else { return [] }
        let lit = String(repeating: BlockFont.block, count: xScale)
        let dark = String(repeating: " ", count: xScale)
        var result: [String] = []
        result.reserveCapacity(size * yScale)
        for pixelRow in bitmap {
            let line = pixelRow.map { $0 == "#" ? lit : dark }.joined()
            for _ in 0..<yScale { result.append(line) }
        }
        return result
    }
}
