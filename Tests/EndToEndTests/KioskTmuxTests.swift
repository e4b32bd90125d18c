import BLEPayload
import BeacondTestSupport
import Foundation
import Testing

@testable import BeacondClient

/// `beacond kiosk` in a real terminal (tmux), against `beacond run --backend replay`: the screen is
/// read with `capture-pane` and every wait polls it until the expected text appears.
@Suite(.serialized) struct KioskTmuxTests {
    static let base: Int64 = 1_778_932_800_000_000

    /// Safety car in zone 2 at once, red flag in zone 3 eight seconds later (time for a slow start of
    /// tmux and the kiosk to show the safety car first); both for 255 s.
    static let safetyCarThenRedFlag = CaptureTimeExtremesTests.btsnoop(
        "kiosk-sc-red.btsnoop",
        [
            (base, CaptureTimeExtremesTests.h4(zone: 2, mode: .safetyCar, sequence: 1, ttl: 255)),
            (base + 8_000_000, CaptureTimeExtremesTests.h4(zone: 3, mode: .redFlag, sequence: 1, ttl: 255)),
        ])

    /// Evacuation in zone 1 for 255 s.
    static let evacuation = CaptureTimeExtremesTests.btsnoop(
        "kiosk-evacuation.btsnoop",
        [(base, CaptureTimeExtremesTests.h4(zone: 1, mode: .evacuation, sequence: 1, ttl: 255))])

    /// Background colours as the kiosk sends them in truecolor (KioskColors).
    static let amber = "\u{1B}[48;2;255;130;0m"
    static let red = "\u{1B}[48;2;210;0;0m"
    static let white = "\u{1B}[48;2;255;255;255m"
    static let grey = "\u{1B}[48;2;90;90;90m"

    /// The pane's command: a line before, the kiosk in 24-bit colour, then its exit status, so the
    /// test sees the main screen come back.
    static func paneCommand(socket: String, steady: Bool) -> String {
        let kiosk = "'\(BeacondProcess.executable.path)' kiosk --socket '\(socket)'" + (steady ? " --steady" : "")
        return "echo before-kiosk; env -u NO_COLOR COLORTERM=truecolor \(kiosk); echo EXIT=$?; sleep 600"
    }

    /// The kiosk's pid: the child of the pane's shell.
    static func kioskPID(_ tmux: TmuxSession) -> Int32? {
        guard let shell = Int32(tmux.display("#{pane_pid}")) else { return nil }
        var pid: Int32?
        _ = blockingWaitUntil(within: 5) {
            pid = ProcessFigures.child(of: shell)
            return pid != nil
        }
        return pid
    }

    /// A row's text as the kiosk centres it in `columns` (trailing spaces trimmed).
    static func centred(_ text: String, columns: Int) -> String {
        String(repeating: " ", count: (columns - text.count) / 2) + text
    }

    @Test(.enabled(if: TmuxSession.available, "tmux is not installed (make deps installs it): kiosk tests skipped"))
    func followsTheDaemonThroughResizeLossAndRecovery() throws {
        let name = "kiosk-\(UUID().uuidString.prefix(8).lowercased())"
        // Zones 1 and 2 are named by the daemon's config (zone_name); zone 3 is not.
        let config = BeacondProcess.temporaryFile("kiosk-zones-\(name).yaml")
        try Data("zones:\n  names:\n    1: \"Main grandstand\"\n    2: \"Pit lane\"\n".utf8)
            .write(to: URL(fileURLWithPath: config))
        defer { try? FileManager.default.removeItem(atPath: config) }
        let daemon = try DaemonProcess(
            ["--config", config, "--backend", "replay", "--replay", Self.safetyCarThenRedFlag, "--speed", "1"],
            name: name)
        #expect(daemon.waitForLog("listening on"))
        // Reads the same states as the kiosk, for the red flag's publication time.
        let client = try LineClient(path: daemon.socket)
        let tmux = try TmuxSession(
            columns: 80, rows: 24, command: Self.paneCommand(socket: daemon.socket, steady: true))
        defer { tmux.kill() }

        // The mode as text on the last row, its colour, the zone and the big letters.
        #expect(tmux.waitFor { $0.statusLine() == "SC" }, "\(tmux.text())")
        let safetyCar = tmux.text()
        #expect(safetyCar.count == 24)
        #expect(safetyCar.contains { $0.contains("Zone 2 — Pit lane") })
        #expect(safetyCar.contains { $0.contains("Source: track beacon") })
        #expect(safetyCar.filter { $0.contains("██") }.count >= 7)
        #expect(tmux.escaped().contains(Self.amber))

        // Redraw latency: from the state's publication (its "ts") to the pane showing it.
        #expect(tmux.waitFor(timeout: 20) { $0.statusLine() == "RED FLAG" }, "\(tmux.text())")
        let shownAt = Date().timeIntervalSince1970
        var state = client.next(type: "state")
        while let current = state, current["mode"] as? String != "red_flag" { state = client.next(type: "state") }
        let publishedAt = try #require(state?["ts"] as? Double)
        let latency = shownAt - publishedAt
        print("kiosk redraw latency (state published → pane shows it): \(Int(latency * 1000)) ms")
        #expect(latency < 0.5, "redraw latency \(latency) s")
        #expect(tmux.escaped().contains(Self.red))
        #expect(!tmux.escaped().contains(Self.amber))
        #expect(tmux.text().contains { $0.contains("Zone 3") && !$0.contains("—") })

        // Idle: a state held, the kiosk ticking once a second.
        let pid = try #require(Self.kioskPID(tmux))
        let idle = try #require(ProcessFigures.idle(pid))
        let (cpu, wall, rss) = (idle.cpu, idle.wall, idle.residentKilobytes)
        print("kiosk idle: \(String(format: "%.2f", cpu)) s CPU in \(String(format: "%.1f", wall)) s, RSS \(rss) kB")
        #expect(cpu < 0.05 * wall, "CPU \(cpu) s in \(wall) s")
        #expect(rss < 100_000)

        // SIGWINCH: redrawn at the new size, larger and down to 20x6.
        try tmux.resize(columns: 100, rows: 30)
        #expect(tmux.waitFor { $0.text().count == 30 && $0.text().last == Self.centred("RED FLAG", columns: 100) })
        try tmux.resize(columns: 20, rows: 6)
        #expect(tmux.waitFor { $0.text().count == 6 && $0.text().last == Self.centred("RED FLAG", columns: 20) })
        #expect(tmux.text().allSatisfy { $0.count <= 20 })
        try tmux.resize(columns: 80, rows: 24)
        #expect(tmux.waitFor { $0.text().count == 24 && $0.text().last == Self.centred("RED FLAG", columns: 80) })

        // The daemon dies: NO SIGNAL, in grey, with the reason.
        #expect(daemon.stop(signal: SIGKILL) != nil)
        #expect(tmux.waitFor { $0.statusLine() == "NO SIGNAL — daemon unreachable" }, "\(tmux.text())")
        #expect(tmux.escaped().contains(Self.grey))
        #expect(tmux.text().contains { $0.contains("No contact with beacond for") })

        // A new daemon on the same socket: the kiosk reconnects by itself (backoff at most 2 s).
        let second = try DaemonProcess(
            ["--config", config, "--backend", "replay", "--replay", Self.evacuation, "--speed", "1"], name: name)
        #expect(second.socket == daemon.socket)
        #expect(tmux.waitFor { $0.statusLine() == "EVACUATE" }, "\(tmux.text())")
        #expect(tmux.text().contains { $0.contains("Zone 1 — Main grandstand") })
        // --steady: red every time, never the white phase.
        for _ in 0..<6 {
            let screen = tmux.escaped()
            #expect(screen.contains(Self.red) && !screen.contains(Self.white))
            usleep(250_000)
        }

        // SIGTERM: the terminal comes back (main screen, cursor shown) and the exit status is 0.
        kill(pid, SIGTERM)
        #expect(tmux.waitFor { $0.text().contains("EXIT=0") }, "\(tmux.text())")
        #expect(tmux.text().contains("before-kiosk"))
        #expect(tmux.display("#{alternate_on}") == "0")
        #expect(tmux.display("#{cursor_flag}") == "1")
        #expect(second.stop() != nil)
    }

    @Test(.enabled(if: TmuxSession.available, "tmux is not installed (make deps installs it): kiosk tests skipped"))
    func evacuationFlashesRedAndWhiteAndSIGINTRestores() throws {
        let daemon = try DaemonProcess(["--backend", "replay", "--replay", Self.evacuation, "--speed", "1"])
        #expect(daemon.waitForLog("listening on"))
        let tmux = try TmuxSession(
            columns: 80, rows: 24, command: Self.paneCommand(socket: daemon.socket, steady: false))
        defer { tmux.kill() }
        #expect(tmux.waitFor { $0.statusLine() == "EVACUATE" }, "\(tmux.text())")
        // Two captures differ in the background: red with white letters, then white with red ones.
        var sawRed = false
        var sawWhite = false
        var letters: Set<[String]> = []
        _ = blockingWaitUntil(within: 10, intervalMicros: 50_000) {
            let screen = tmux.escaped()
            if screen.contains(Self.red) { sawRed = true }
            if screen.contains(Self.white) && screen.contains("\u{1B}[38;2;210;0;0m") { sawWhite = true }
            letters.insert(
                tmux.text().map { $0.replacingOccurrences(of: #"\d+ s"#, with: "", options: .regularExpression) })
            return sawRed && sawWhite
        }
        #expect(sawRed && sawWhite, "red \(sawRed), white \(sawWhite)")
        // Only the colours change between the phases (the age line aside).
        #expect(letters.count == 1)
        let pid = try #require(Self.kioskPID(tmux))
        kill(pid, SIGINT)
        #expect(tmux.waitFor { $0.text().contains("EXIT=0") }, "\(tmux.text())")
        #expect(tmux.display("#{alternate_on}") == "0")
        #expect(daemon.stop() != nil)
    }

    /// Issue 31: the kiosk cycles through its languages, each for `kiosk.language_period`, the
    /// first first; the evacuation shows the block arrow on the left and the exit in the words of
    /// the language shown.
    @Test(.enabled(if: TmuxSession.available, "tmux is not installed (make deps installs it): kiosk tests skipped"))
    func theLanguagesTakeTurnsAndTheArrowPointsToTheExit() throws {
        let daemon = try DaemonProcess(["--backend", "replay", "--replay", Self.evacuation, "--speed", "1"])
        #expect(daemon.waitForLog("listening on"))
        let config = BeacondProcess.temporaryFile("kiosk-languages-\(UUID().uuidString.prefix(6)).yaml")
        try Data(
            """
            kiosk:
              languages: [es, en]
              language_period: 1
              exit:
                direction: up_right
                name: Puerta 3 / Gate 3
                distance_m: 120

            """.utf8
        ).write(to: URL(fileURLWithPath: config))
        let kiosk =
            "'\(BeacondProcess.executable.path)' kiosk --steady --config '\(config)' --socket '\(daemon.socket)'"
        let tmux = try TmuxSession(columns: 80, rows: 24, command: "env -u NO_COLOR COLORTERM=truecolor \(kiosk)")
        defer { tmux.kill() }
        var seen: [(status: String, at: Double)] = []
        let start = Date()
        _ = blockingWaitUntil(within: 15, intervalMicros: 50_000) {
            let status = tmux.statusLine()
            if status != seen.last?.status, !status.isEmpty {
                seen.append((status, Date().timeIntervalSince(start)))
                let screen = tmux.text()
                if status == "EVACUACIÓN" {
                    #expect(screen.contains { $0.contains("Salida: Puerta 3 / Gate 3 — 120 m") }, "\(screen)")
                } else if status == "EVACUATE" {
                    #expect(screen.contains { $0.contains("Exit: Puerta 3 / Gate 3 — 120 m") }, "\(screen)")
                }
            }
            return seen.filter { $0.status == "EVACUACIÓN" }.count >= 2 && seen.contains { $0.status == "EVACUATE" }
        }
        let order = seen.map(\.status).filter { $0 == "EVACUACIÓN" || $0 == "EVACUATE" }
        #expect(Array(order.prefix(3)) == ["EVACUACIÓN", "EVACUATE", "EVACUACIÓN"], "\(seen)")
        // Each language stays about a second (the period), not a tick more or less than a poll.
        let changes = seen.filter { $0.status == "EVACUACIÓN" || $0.status == "EVACUATE" }.map(\.at)
        for (earlier, later) in zip(changes.dropFirst(), changes.dropFirst(2)) {
            #expect(abs(later - earlier - 1) < 0.4, "\(seen)")
        }
        // The arrow at 80×24: 13 pixels of 2 columns and 1 row, from column 3 (KioskFrame).
        // (capture-pane trims trailing spaces, so a row is compared up to its last block).
        let arrow = BlockArrow.rows(.upRight, xScale: 2, yScale: 1).map {
            "  " + String($0.reversed().drop { $0 == " " }.reversed())
        }
        let screen = tmux.text()
        let top = screen.firstIndex { $0.hasPrefix(arrow[0]) }
        #expect(
            top.map { Array(screen[$0...].prefix(arrow.count)).elementsEqual(arrow) { $0.hasPrefix($1) } } == true,
            "\(screen)")
        #expect(daemon.stop() != nil)
    }
}
