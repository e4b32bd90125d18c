import Foundation
import Testing

@testable import BeacondClient
@testable import BeacondCore

@Suite struct KioskFrameTests {
    static let truecolor = TerminalCapabilities(colors: .truecolor)

    static func render(
        _ view: KioskView, _ columns: Int = 80, _ rows: Int = 24, colors: TerminalCapabilities.Colors = .truecolor,
        alternate: Bool = false
    ) -> [UInt8] {
        KioskFrame.render(
            view, columns: columns, rows: rows, capabilities: TerminalCapabilities(colors: colors),
            alternate: alternate)
    }

    /// The exact colour sequences each flag's frame starts every row with, per colour depth.
    static let expected: [KioskView.Flag: [TerminalCapabilities.Colors: String]] = [
        .green: [
            .truecolor: "\u{1B}[0m\u{1B}[38;2;255;255;255m\u{1B}[48;2;0;150;57m",
            .xterm256: "\u{1B}[0m\u{1B}[38;5;231m\u{1B}[48;5;28m", .ansi16: "\u{1B}[0m\u{1B}[37m\u{1B}[42m",
        ],
        .yellow: [
            .truecolor: "\u{1B}[0m\u{1B}[38;2;0;0;0m\u{1B}[48;2;255;214;0m",
            .xterm256: "\u{1B}[0m\u{1B}[38;5;16m\u{1B}[48;5;220m", .ansi16: "\u{1B}[0m\u{1B}[30m\u{1B}[43m",
        ],
        .vsc: [
            .truecolor: "\u{1B}[0m\u{1B}[38;2;0;0;0m\u{1B}[48;2;255;130;0m",
            .xterm256: "\u{1B}[0m\u{1B}[38;5;16m\u{1B}[48;5;208m", .ansi16: "\u{1B}[0m\u{1B}[30m\u{1B}[43m",
        ],
        .safetyCar: [
            .truecolor: "\u{1B}[0m\u{1B}[38;2;0;0;0m\u{1B}[48;2;255;130;0m",
            .xterm256: "\u{1B}[0m\u{1B}[38;5;16m\u{1B}[48;5;208m", .ansi16: "\u{1B}[0m\u{1B}[30m\u{1B}[43m",
        ],
        .red: [
            .truecolor: "\u{1B}[0m\u{1B}[38;2;255;255;255m\u{1B}[48;2;210;0;0m",
            .xterm256: "\u{1B}[0m\u{1B}[38;5;231m\u{1B}[48;5;160m", .ansi16: "\u{1B}[0m\u{1B}[37m\u{1B}[41m",
        ],
        .evacuation: [
            .truecolor: "\u{1B}[0m\u{1B}[38;2;255;255;255m\u{1B}[48;2;210;0;0m",
            .xterm256: "\u{1B}[0m\u{1B}[38;5;231m\u{1B}[48;5;160m", .ansi16: "\u{1B}[0m\u{1B}[37m\u{1B}[41m",
        ],
        .noSignal: [
            .truecolor: "\u{1B}[0m\u{1B}[38;2;255;255;255m\u{1B}[48;2;90;90;90m",
            .xterm256: "\u{1B}[0m\u{1B}[38;5;231m\u{1B}[48;5;240m", .ansi16: "\u{1B}[0m\u{1B}[30m\u{1B}[47m",
        ],
    ]

    @Test(arguments: KioskView.Flag.allCases, [TerminalCapabilities.Colors.truecolor, .xterm256, .ansi16])
    func everyRowIsPaintedInTheFlagsColoursWithTheStatusOnTheLastRow(
        flag: KioskView.Flag, colors: TerminalCapabilities.Colors
    ) throws {
        let view = KioskSamples.view(flag)
        let frame = Self.render(view, colors: colors)
        let text = String(decoding: frame, as: UTF8.self)
        let sgr = try #require(Self.expected[flag]?[colors])
        // Every row: its cursor position, then the colours, then exactly 80 cells.
        #expect(text.hasPrefix("\u{1B}[H" + sgr))
        for row in 2...24 { #expect(text.contains("\u{1B}[\(row);1H" + sgr), "row \(row)") }
        #expect(text.components(separatedBy: sgr).count - 1 == 24)
        let rows = KioskSamples.rows(frame)
        #expect(rows.count == 24)
        #expect(rows.allSatisfy { KioskCells.width(of: $0) == 80 })
        #expect(rows.last?.trimmingCharacters(in: .whitespaces) == view.status)
        // The other depths' sequences are absent.
        for other in TerminalCapabilities.Colors.allCases where other != colors && other != .none {
            if let sequence = Self.expected[flag]?[other], sequence != sgr { #expect(!text.contains(sequence)) }
        }
        if colors != .truecolor { #expect(!text.contains("38;2;") && !text.contains("48;2;")) }
        if colors != .xterm256 { #expect(!text.contains("38;5;") && !text.contains("48;5;")) }
    }

    @Test(arguments: KioskView.Flag.allCases)
    func withoutColoursTheFrameHasNoColourEscapeAtAll(flag: KioskView.Flag) {
        let view = KioskSamples.view(flag)
        for alternate in [false, true] {
            let frame = Self.render(view, colors: .none, alternate: alternate)
            let escapes = KioskSamples.escapes(frame)
            #expect(escapes.count == 24)
            #expect(escapes.allSatisfy { $0 == "\u{1B}[H" || $0.hasSuffix(";1H") })
            #expect(KioskSamples.rows(frame).last?.trimmingCharacters(in: .whitespaces) == view.status)
        }
    }

    @Test func theHeadlineIsInBlockLettersAtTheLargestScaleThatFits() throws {
        // 80x24: GREEN at 2 columns and 2 rows per pixel, with its four detail lines.
        let green = KioskSamples.rows(Self.render(KioskSamples.view(.green)))
        let letters = try #require(BlockFont.rows("GREEN", xScale: 2, yScale: 2))
        let trimmed = green.map { $0.trimmingCharacters(in: .whitespaces) }
        let first = try #require(trimmed.firstIndex(of: letters[0].trimmingCharacters(in: .whitespaces)))
        #expect(Array(trimmed[first..<first + 14]) == letters.map { $0.trimmingCharacters(in: .whitespaces) })
        #expect(trimmed.contains("Zone 2"))
        #expect(trimmed.contains("Source: track beacon"))
        // EVACUATE is wider: scale 1 at 80 columns, 4 (and 4 columns per pixel) at 200x60.
        let small = KioskSamples.rows(Self.render(KioskSamples.view(.evacuation)))
        #expect(small.filter { $0.contains("█") }.count == 7)
        let large = KioskSamples.rows(Self.render(KioskSamples.view(.evacuation), 200, 60))
        #expect(large.count == 60 && large.allSatisfy { KioskCells.width(of: $0) == 200 })
        #expect(large.filter { $0.contains("█") }.count == 28)
        #expect(large.contains { $0.contains(String(repeating: "█", count: 16)) })
        #expect(large.last?.trimmingCharacters(in: .whitespaces) == "EVACUATE")
    }

    @Test(arguments: KioskView.Flag.allCases)
    func atTwentyBySixTheHeadlineIsPlainTextAndEverythingFits(flag: KioskView.Flag) {
        let view = KioskSamples.view(flag)
        let rows = KioskSamples.rows(Self.render(view, 20, 6))
        #expect(rows.count == 6)
        #expect(rows.allSatisfy { KioskCells.width(of: $0) == 20 })
        #expect(!rows.joined().contains("█"))
        let headline = view.headline.count <= 20 ? view.headline : String(view.headline.prefix(19)) + "…"
        #expect(rows.contains { $0.trimmingCharacters(in: .whitespaces) == headline })
        let status = view.status.count <= 20 ? view.status : String(view.status.prefix(19)) + "…"
        #expect(rows.last?.trimmingCharacters(in: .whitespaces) == status)
    }

    @Test(arguments: [(0, 0), (1, 1), (-5, -3), (1, 40), (40, 1), (2, 2), (5, 3), (19, 5), (100_000, 100_000)])
    func absurdSizesNeverTrap(columns: Int, rows: Int) {
        for flag in KioskView.Flag.allCases {
            let frame = Self.render(KioskSamples.view(flag), columns, rows)
            let lines = KioskSamples.rows(frame)
            let expectedRows = min(max(rows, 0), KioskFrame.maxRows)
            let expectedColumns = min(max(columns, 0), KioskFrame.maxColumns)
            #expect(lines.count == max(expectedRows, 1))
            if expectedRows > 0 { #expect(lines.allSatisfy { KioskCells.width(of: $0) == expectedColumns }) }
        }
        #expect(Self.render(KioskSamples.view(.red), 0, 0) == Array("\u{1B}[H".utf8))
        #expect(KioskSamples.rows(Self.render(KioskSamples.view(.red), 1, 1)) == ["…"])
    }

    @Test func escapesAndBellsFromOutsideNeverReachTheFrame() {
        let hostile = "Track \u{1B}]0;owned\u{07} clear\u{1B}[2J\u{9B}31m \u{202E}evil\u{0} done"
        let state = KioskSamples.state(
            mode: "red_flag", source: "remote", remote: KioskSamples.remote(message: hostile))
        var view = KioskView(link: .connected(state), now: KioskSamples.now)
        // A zone name (the daemon's zone_name) goes through the same stripping; the renderer strips
        // whatever reaches it again.
        view.details.append("Zone 3 — Main\u{1B}[31m grandstand\u{07}")
        for colors in TerminalCapabilities.Colors.allCases {
            let frame = Self.render(view, 120, 30, colors: colors)
            #expect(!frame.contains(0x07) && !frame.contains(0x00))
            let scalars = String(decoding: frame, as: UTF8.self).unicodeScalars
            #expect(!scalars.contains { $0 == "\u{9B}" || $0 == "\u{202E}" })
            // The only escapes are the frame's own: cursor positions and colours.
            #expect(KioskSamples.escapes(frame).allSatisfy { $0.hasSuffix("H") || $0.hasSuffix("m") })
            #expect(KioskSamples.escapes(frame).count == 30 * (colors == .none ? 1 : 4))
            let rows = KioskSamples.rows(frame).map { $0.trimmingCharacters(in: .whitespaces) }
            #expect(rows.contains("Race control: Track ]0;owned clear[2J31m evil done"))
            #expect(rows.contains("Zone 3 — Main[31m grandstand"))
        }
    }

    @Test func overLongTextIsCutToTheWidthWithAnEllipsis() {
        var view = KioskSamples.view(.yellow)
        view.details = [String(repeating: "x", count: 150), "漢字" + String(repeating: "字", count: 60)]
        let rows = KioskSamples.rows(Self.render(view, 60, 24)).map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(rows.contains(String(repeating: "x", count: 59) + "…"))
        // Wide characters count two cells: 29 of them and the ellipsis fill 59 of 60.
        #expect(rows.contains { $0.hasPrefix("漢字") && $0.hasSuffix("…") && KioskCells.width(of: $0) == 59 })
    }

    @Test func theFlashPhasesDifferOnlyInColours() {
        let view = KioskSamples.view(.evacuation)
        let red = Self.render(view, alternate: false)
        let white = Self.render(view, alternate: true)
        #expect(red != white)
        #expect(KioskSamples.rows(red) == KioskSamples.rows(white))
        let whiteText = String(decoding: white, as: UTF8.self)
        #expect(whiteText.contains("\u{1B}[38;2;210;0;0m\u{1B}[48;2;255;255;255m"))
        #expect(!whiteText.contains("48;2;210;0;0m"))
        let sixteen = String(decoding: Self.render(view, colors: .ansi16, alternate: true), as: UTF8.self)
        #expect(sixteen.contains("\u{1B}[31m\u{1B}[47m"))
        // Flags that do not flash ignore the phase.
        for flag in KioskView.Flag.allCases where flag != .evacuation {
            #expect(Self.render(KioskSamples.view(flag), alternate: true) == Self.render(KioskSamples.view(flag)))
        }
    }

    @Test func onSixteenColoursYellowAndAmberShareAColourAndTheLettersTellThemApart() {
        let frames = [KioskView.Flag.yellow, .vsc, .safetyCar].map { flag in
            String(decoding: Self.render(KioskSamples.view(flag), colors: .ansi16), as: UTF8.self)
        }
        #expect(frames.allSatisfy { $0.contains("\u{1B}[30m\u{1B}[43m") })
        #expect(Set(frames.map { KioskSamples.rows(Array($0.utf8)).last ?? "" }).count == 3)
    }
}
