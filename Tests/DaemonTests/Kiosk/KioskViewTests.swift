import Foundation
import Testing

@testable import BeacondClient
@testable import BeacondCore

@Suite struct KioskViewTests {
    @Test(arguments: [
        ("normal", KioskView.Flag.green, "GREEN"), ("yellow_flag", .yellow, "YELLOW"), ("vsc", .vsc, "VSC"),
        ("safety_car", .safetyCar, "SC"), ("red_flag", .red, "RED FLAG"), ("evacuation", .evacuation, "EVACUATE"),
        ("unknown", .noSignal, "NO SIGNAL"), ("purple_flag", .noSignal, "NO SIGNAL"), ("", .noSignal, "NO SIGNAL"),
    ])
    func eachModeHasItsFlagAndWords(mode: String, flag: KioskView.Flag, status: String) {
        let view = KioskView(link: .connected(KioskSamples.state(mode: mode)), now: KioskSamples.now)
        #expect(view.flag == flag)
        #expect(view.status == status)
        #expect(view.headline == status)
        #expect(view.flashes == (flag == .evacuation))
        if flag == .noSignal {
            #expect(view.details.first == "No track beacon or race control state")
        } else {
            #expect(view.details == ["Zone 2", "Source: track beacon", "Showing for 3 s"])
        }
    }

    /// A verified v3 frame's claim says so on the details line; an unsigned one does not.
    @Test(arguments: [(true, "Source: track beacon, signed"), (false, "Source: track beacon")])
    func aSignedBeaconSaysSo(signed: Bool, line: String) {
        var state = KioskSamples.state(mode: "evacuation")
        state.beacon = BeaconReport(
            key: "zone 2 @ C0:FF:EE:00:00:02", kind: "circuit", zone: 2, sourceID: 7, address: "C0:FF:EE:00:00:02",
            mode: "evacuation", rssi: -60, distance: nil, sequence: 4, ttl: 10, active: true, held: false,
            contested: false, ttlLeft: 9, lastSeen: 0.1, temperature: nil, rejected: nil, signed: signed)
        let view = KioskView(link: .connected(state), now: KioskSamples.now)
        #expect(view.details.contains(line))
        #expect(view.status == "EVACUATE")
    }

    /// Issue 26: NO SIGNAL says in words why no beacon is heard ("Scanner none" was jargon).
    @Test(arguments: [
        (ScannerStatus(backend: "hci", state: .up), nil),
        (ScannerStatus(backend: "hci", state: .down), "Bluetooth scanner down: no beacon can be heard"),
        (ScannerStatus(backend: "replay", state: .none), "Replay finished: the capture has no more beacons"),
        (ScannerStatus(backend: "bluez", state: .none), "No Bluetooth scanner running"),
    ])
    func noSignalSaysWhyNoBeaconIsHeard(scanner: ScannerStatus, line: String?) {
        var state = KioskSamples.state(mode: "unknown")
        state.scanner = scanner
        let view = KioskView(link: .connected(state), now: KioskSamples.now)
        #expect(view.details == ["No track beacon or race control state"] + (line.map { [$0] } ?? []))
        #expect(!view.details.joined().contains("none"))
    }

    @Test func aStaleRemoteStateSaysStaleWithItsAgeGrowing() {
        let state = KioskSamples.state(
            mode: "red_flag", source: "remote", zone: nil,
            remote: KioskSamples.remote(fresh: false, age: 62, message: "Debris at turn 4"), ageMicros: 3_000_000)
        let view = KioskView(link: .connected(state), now: KioskSamples.now)
        #expect(view.flag == .red)
        #expect(view.status == "RED FLAG — STALE" && view.headline == "RED FLAG")
        #expect(
            view.details == [
                "Whole circuit", "Source: race control", "Race control: Debris at turn 4",
                "Race control STALE — last update 1 min 5 s ago", "Showing for 3 s",
            ])
        let fresh = KioskSamples.state(mode: "red_flag", source: "remote", remote: KioskSamples.remote(fresh: true))
        #expect(!KioskView(link: .connected(fresh), now: KioskSamples.now).details.joined().contains("STALE"))
    }

    @Test func unreachableIsNoSignalWithHowLongAndWhy() {
        let link = KioskView.Link.unreachable(since: KioskSamples.now - 75_000_000, reason: "refused\u{1B}[2J")
        let view = KioskView(link: link, now: KioskSamples.now)
        #expect(view.flag == .noSignal)
        #expect(view.status == "NO SIGNAL — daemon unreachable")
        #expect(view.details == ["No contact with beacond for 1 min 15 s", "refused[2J", "Reconnecting…"])
    }

    @Test func theKiosksLinkKeepsTheFirstLossUntilItReconnects() {
        var link = TerminalKiosk.LinkState(since: 100, reason: "connecting")
        link.apply(.lost(reason: "nobody listens"), now: 500)
        #expect(link.link == .unreachable(since: 100, reason: "nobody listens"))
        let state = KioskSamples.state(mode: "normal")
        link.apply(.connected(state), now: 600)
        #expect(link.link == .connected(state))
        link.apply(.lost(reason: "closed"), now: 700)
        link.apply(.lost(reason: "refused"), now: 900)
        #expect(link.link == .unreachable(since: 700, reason: "refused"))
        let red = KioskSamples.state(mode: "red_flag")
        link.apply(.state(red), now: 1000)
        #expect(link.link == .connected(red))
    }
}

// glibc's pseudo-terminal calls, which the Glibc module does not import (they are XOPEN).
@_silgen_name("posix_openpt") private func openPseudoTerminal(_ flags: Int32) -> Int32
@_silgen_name("grantpt") private func grantPseudoTerminal(_ fd: Int32) -> Int32
@_silgen_name("unlockpt") private func unlockPseudoTerminal(_ fd: Int32) -> Int32
@_silgen_name("ptsname") private func pseudoTerminalName(_ fd: Int32) -> UnsafeMutablePointer<CChar>?

@Suite struct KioskTerminalPartsTests {
    @Test(arguments: [
        ([:], TerminalCapabilities.Choice.auto, TerminalCapabilities.Colors.ansi16),
        (["TERM": "linux"], .auto, .ansi16),
        (["TERM": "xterm-256color"], .auto, .xterm256),
        (["TERM": "tmux-256color", "COLORTERM": "truecolor"], .auto, .truecolor),
        (["TERM": "xterm", "COLORTERM": "24bit"], .auto, .truecolor),
        (["TERM": "xterm", "COLORTERM": "yes"], .auto, .ansi16),
        (["TERM": "xterm-256color", "COLORTERM": "truecolor", "NO_COLOR": "1"], .auto, .none),
        (["TERM": "xterm-256color", "NO_COLOR": ""], .auto, .xterm256),
        (["TERM": "dumb", "COLORTERM": "truecolor"], .auto, .none),
        (["TERM": "dumb"], .ansi16, .ansi16),
        (["NO_COLOR": "1"], .truecolor, .truecolor),
        (["TERM": "xterm-256color", "COLORTERM": "truecolor"], .none, .none),
        (["TERM": "linux"], .xterm256, .xterm256),
    ])
    func coloursFollowTheEnvironmentUnlessTheFlagSaysOtherwise(
        environment: [String: String], choice: TerminalCapabilities.Choice, colors: TerminalCapabilities.Colors
    ) {
        #expect(TerminalCapabilities.detect(environment: environment, choice: choice).colors == colors)
    }

    @Test func everyGlyphIsSevenRowsOfOneWidthAndEveryHeadlineCanBeDrawn() throws {
        for (character, glyph) in BlockFont.glyphs {
            #expect(glyph.count == BlockFont.height, "\(character)")
            #expect(Set(glyph.map(\.count)).count == 1, "\(character)")
            #expect(glyph.allSatisfy { $0.allSatisfy { $0 == "#" || $0 == "." } }, "\(character)")
        }
        for flag in KioskView.Flag.allCases {
            #expect(BlockFont.canDraw(flag.headline), "\(flag)")
            for scale in 1...3 {
                let rows = try #require(BlockFont.rows(flag.headline, xScale: 2 * scale, yScale: scale))
                #expect(rows.count == 7 * scale)
                #expect(rows.allSatisfy { $0.count == BlockFont.width(of: flag.headline, xScale: 2 * scale) })
            }
        }
        #expect(BlockFont.rows("SC", xScale: 1, yScale: 1)?.first == " ████  ████")
        #expect(!BlockFont.canDraw("GREEN€") && !BlockFont.canDraw("green") && !BlockFont.canDraw(""))
        #expect(BlockFont.rows("€", xScale: 1, yScale: 1) == nil && BlockFont.rows("A", xScale: 0, yScale: 1) == nil)
        // No two glyphs look alike.
        var shapes: [[String]: Character] = [:]
        for (character, glyph) in BlockFont.glyphs {
            #expect(shapes[glyph] == nil, "\(character) looks like \(shapes[glyph].map { String($0) } ?? "")")
            shapes[glyph] = character
        }
    }

    @Test func theKioskCommandBlocksItsSignalsIncludingSIGWINCH() {
        let kiosk = DaemonSignals.handled(byCommandIn: ["beacond", "kiosk", "--steady"])
        #expect(kiosk == [SIGHUP, SIGTERM, SIGINT, SIGWINCH])
        #expect(DaemonSignals.handled(byCommandIn: ["beacond", "run"]) == [SIGHUP, SIGTERM, SIGINT])
        #expect(DaemonSignals.handled(byCommandIn: ["beacond", "status"]).isEmpty)
        #expect(DaemonSignals.handled(byCommandIn: ["beacond"]).isEmpty)
    }

    @Test func theTerminalIsTakenAndGivenBackOnAPseudoTerminal() throws {
        let master = openPseudoTerminal(O_RDWR | O_NOCTTY)
        try #require(master >= 0)
        defer { close(master) }
        #expect(grantPseudoTerminal(master) == 0 && unlockPseudoTerminal(master) == 0)
        let name = try #require(pseudoTerminalName(master).map { String(cString: $0) })
        let slave = open(name, O_RDWR | O_NOCTTY)
        try #require(slave >= 0)
        defer { close(slave) }
        var window = winsize(ws_row: 33, ws_col: 101, ws_xpixel: 0, ws_ypixel: 0)
        #expect(ioctl(master, UInt(TIOCSWINSZ), &window) == 0)
        let terminal = KioskTerminal(output: slave, input: slave)
        #expect(terminal.size() == (columns: 101, rows: 33))
        try terminal.enter()
        var settings = termios()
        tcgetattr(slave, &settings)
        #expect(settings.c_lflag & tcflag_t(ECHO) == 0)
        try terminal.write(Array("frame".utf8))
        terminal.restore()
        terminal.restore()
        tcgetattr(slave, &settings)
        #expect(settings.c_lflag & tcflag_t(ECHO) != 0)
        let expected = "\u{1B}[?1049h\u{1B}[?25l\u{1B}[?7l\u{1B}[Hframe\u{1B}[0m\u{1B}[?7h\u{1B}[?25h\u{1B}[?1049l"
        let written = String(decoding: readPseudoTerminal(master, atLeast: expected.utf8.count), as: UTF8.self)
        #expect(written == expected)
    }

    /// The line discipline may hand the master the slave's writes in pieces (CI once read only
    /// the first write), so this reads until `atLeast` bytes came or nothing more arrives in 2 s.
    private func readPseudoTerminal(_ master: Int32, atLeast wanted: Int) -> [UInt8] {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 256)
        while received.count < wanted {
            var ready = pollfd(fd: master, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, 2_000) == 1 else { break }
            let count = read(master, &buffer, buffer.count)
            guard count > 0 else { break }
            received += buffer[0..<count]
        }
        return received
    }

    @Test func withoutATerminalTheSizeIsEightyByTwentyFourAndNoColoursMeansNoReset() throws {
        var fds: [Int32] = [-1, -1]
        try #require(pipe(&fds) == 0)
        defer { close(fds[0]) }
        let terminal = KioskTerminal(output: fds[1], input: fds[0], resetsColors: false)
        #expect(terminal.size() == (columns: 80, rows: 24))
        try terminal.enter()
        terminal.restore()
        close(fds[1])
        var buffer = [UInt8](repeating: 0, count: 256)
        let count = read(fds[0], &buffer, buffer.count)
        let written = String(decoding: buffer[0..<max(0, count)], as: UTF8.self)
        #expect(written == "\u{1B}[?1049h\u{1B}[?25l\u{1B}[?7l\u{1B}[H\u{1B}[?7h\u{1B}[?25h\u{1B}[?1049l")
        // A write the kernel refuses is an error (/dev/full: ENOSPC), not a lost frame.
        let full = open("/dev/full", O_WRONLY)
        try #require(full >= 0)
        defer { close(full) }
        #expect(throws: KioskTerminal.WriteError.self) { try KioskTerminal(output: full).write([0x41]) }
    }

    /// Issue 25, 7a: invisible format characters from outside (direction marks, the Arabic letter
    /// mark, the byte-order mark, joiners, the soft hyphen) leave the view itself, so the web
    /// kiosk (which sends the view as it is) and the terminal kiosk show the same text.
    @Test func invisibleFormatCharactersLeaveTheViewForBothKiosks() {
        let hidden: [Unicode.Scalar] = [
            "\u{200E}", "\u{200F}", "\u{061C}", "\u{FEFF}", "\u{200D}", "\u{00AD}", "\u{2060}",
        ]
        var message = "Debris"
        for scalar in hidden { message.unicodeScalars.append(scalar) }
        message += " at turn\u{200B} 4"
        let state = KioskSamples.state(
            mode: "red_flag", source: "remote", zone: nil, remote: KioskSamples.remote(message: message))
        let view = KioskView(link: .connected(state), now: KioskSamples.now)
        let web = WebKioskViewDocument(view)
        #expect(web.details.contains("Race control: Debris at turn 4"), "\(web.details)")
        #expect(!web.json().unicodeScalars.contains { hidden.contains($0) })
        for scalar in hidden { #expect(KioskText.isHidden(scalar) && KioskCells.width(scalar) == nil) }
        let rows = KioskFrame.lines(view, columns: 80, rows: 24)
        #expect(rows.contains { $0.contains("Race control: Debris at turn 4") })
    }
}
