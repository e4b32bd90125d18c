import BLEPayload
import BeacondTestSupport
import Foundation
import Testing

/// `beacond watch` in a real terminal (tmux) against `beacond run --backend replay`, and its plain
/// snapshot without one; the screen is read with `capture-pane`, every wait polls it.
@Suite(.serialized) struct WatchTmuxTests {
    static let base: Int64 = 1_778_932_800_000_000

    /// One advertising report as HCI sends it.
    static func h4(_ address: UInt64, _ data: [UInt8], rssi: Int8, random: Bool = false) -> [UInt8] {
        let report = OwnedAdvertisingReport(
            kind: .advNonconnInd, addressType: random ? .randomDevice : .publicDevice,
            address: BluetoothAddress(rawValue: address), rssi: rssi, data: data)
        return HCIEventEncoder.h4((try? HCIEventEncoder.advertisingReport([report])) ?? [])
    }

    /// Two minutes, every second: zone 1 green at -80 dBm, zone 2 red flag at -50, zone 3 safety car
    /// at -65 (so the key, RSSI and mode orders all differ), and a phone's iBeacon at -70.
    static let capture: String = {
        var phone = AdvertisingDataBuilder()
        phone.appendManufacturerData(companyID: 0x004C, payload: [0x02, 0x15] + [UInt8](repeating: 0xAB, count: 21))
        let beacons: [(UInt16, GeoRacingMode, Int8)] = [(1, .normal, -80), (2, .redFlag, -50), (3, .safetyCar, -65)]
        var records: [(Int64, [UInt8])] = []
        for second in 0..<120 {
            let at = base + Int64(second) * 1_000_000
            for (index, (zone, mode, rssi)) in beacons.enumerated() {
                let signal = GeoRacingSignal.circuit(zone: zone, mode: mode, sequence: 10 * zone, ttl: 30)
                let address = 0xC0_FF_EE_00_00_00 | UInt64(zone)
                records.append((at + Int64(index) * 100_000, h4(address, signal.advertisingData(), rssi: rssi)))
            }
            records.append((at + 500_000, h4(0x4A_11_22_33_44_55, phone.bytes, rssi: -70, random: true)))
        }
        return CaptureTimeExtremesTests.btsnoop("watch-zones.btsnoop", records)
    }()

    static let red = "\u{1B}[48;2;210;0;0m"
    static let amber = "\u{1B}[48;2;255;130;0m"

    /// The table's rows, top to bottom: "zone N" of each.
    static func keys(_ screen: [String]) -> [String] {
        screen.compactMap { line in
            line.firstMatch(of: #/^[▶ ] (zone \d+) +C0:FF:EE/#).map { String($0.output.1) }
        }
    }

    /// The pane's command: the watch in 24-bit colour, then its exit status.
    static func paneCommand(_ arguments: String) -> String {
        "env -u NO_COLOR COLORTERM=truecolor '\(BeacondProcess.executable.path)' watch \(arguments); "
            + "echo EXIT=$?; sleep 600"
    }

    @Test(.enabled(if: TmuxSession.available, "tmux is not installed (make deps installs it): watch tests skipped"))
    func showsTheTableSortsWithSAndQuitsWithQ() throws {
        let daemon = try DaemonProcess(["--backend", "replay", "--replay", Self.capture, "--speed", "1"])
        #expect(daemon.waitForLog("listening on"))
        let command = Self.paneCommand("--socket '\(daemon.socket)' --all")
        let tmux = try TmuxSession(columns: 100, rows: 30, command: command)
        defer { tmux.kill() }

        // The phone is first heard half a second into the capture.
        let phone = { (line: String) in line.hasPrefix("4A:11:22:33:44:55  random") && line.hasSuffix("0x004C") }
        #expect(tmux.waitFor { Self.keys($0.text()).count == 3 && $0.text().contains(where: phone) }, "\(tmux.text())")
        let screen = tmux.text()
        #expect(screen[0].contains("sort: key") && screen[0].contains("s: sort  q: quit"))
        #expect(Self.keys(screen) == ["zone 1", "zone 2", "zone 3"])
        #expect(screen.contains { $0.hasPrefix("state  RED FLAG   source beacon, zone 2") })
        #expect(screen.contains { $0.contains("remote none   scanner replay up   clients 1") })
        #expect(screen.contains { $0.hasPrefix("rejected frames 0") })
        let zone2 = screen.first { $0.contains("C0:FF:EE:00:00:02") } ?? ""
        #expect(zone2.hasPrefix("▶ zone 2") && zone2.contains("RED FLAG") && zone2.contains(" -50 ████▏"))
        let escaped = tmux.escaped()
        #expect(escaped.contains(Self.red) && escaped.contains(Self.amber))

        // s: RSSI (strongest first), last seen, mode (most severe first), and back to the key.
        let orders: [(String, [String])] = [
            ("sort: rssi", ["zone 2", "zone 3", "zone 1"]), ("sort: last-seen", []),
            ("sort: mode", ["zone 2", "zone 3", "zone 1"]), ("sort: key", ["zone 1", "zone 2", "zone 3"]),
        ]
        for (title, order) in orders {
            try tmux.sendKeys("s")
            #expect(tmux.waitFor { $0.text().first?.contains(title) == true }, "\(tmux.text())")
            if !order.isEmpty { #expect(Self.keys(tmux.text()) == order, "\(title)") }
        }

        // Idle against a daemon: 4 status requests and redraws a second.
        let pid = try #require(KioskTmuxTests.kioskPID(tmux))
        let idle = try #require(ProcessFigures.idle(pid))
        let (cpu, wall, rss) = (idle.cpu, idle.wall, idle.residentKilobytes)
        let perRefresh = cpu / (wall * 4) * 1000
        print(
            "watch idle: \(String(format: "%.2f", cpu)) s CPU in \(String(format: "%.1f", wall)) s "
                + "(\(String(format: "%.2f", perRefresh)) ms per refresh), RSS \(rss) kB")
        #expect(cpu < 0.1 * wall, "CPU \(cpu) s in \(wall) s")
        #expect(rss < 100_000)

        // q: the terminal comes back and the exit status is 0.
        try tmux.sendKeys("q")
        #expect(tmux.waitFor { $0.text().contains("EXIT=0") }, "\(tmux.text())")
        #expect(tmux.display("#{alternate_on}") == "0")
        #expect(tmux.display("#{cursor_flag}") == "1")

        // Without a TTY (a pipe), and with --once: one plain snapshot, no escape at all.
        for arguments in [["--all"], ["--once", "--sort", "rssi"]] {
            let once = try BeacondProcess.run(["watch", "--socket", daemon.socket] + arguments)
            #expect(once.status == 0, "\(once.stderr)")
            #expect(!once.stdout.contains("\u{1B}"))
            let lines = once.stdout.split(separator: "\n").map(String.init)
            let byRSSI = arguments.contains("rssi")
            #expect(Self.keys(lines) == (byRSSI ? ["zone 2", "zone 3", "zone 1"] : ["zone 1", "zone 2", "zone 3"]))
            #expect(lines.contains { $0.hasPrefix("state  RED FLAG") })
            #expect(lines.contains { $0.hasPrefix("4A:11:22:33:44:55") } == arguments.contains("--all"))
        }
        #expect(daemon.stop() != nil)

        // No daemon: exit 1, naming the socket's problem.
        let none = try BeacondProcess.run(["watch", "--socket", daemon.socket, "--once"])
        #expect(none.status == 1)
        #expect(none.stderr.contains("beacond watch: error: daemon unreachable"))
    }

    @Test(.enabled(if: TmuxSession.available, "tmux is not installed (make deps installs it): watch tests skipped"))
    func replaysACaptureInProcessAndSIGTERMRestoresTheTerminal() throws {
        let command = Self.paneCommand("--replay '\(Self.capture)' --speed 2")
        let tmux = try TmuxSession(columns: 100, rows: 30, command: command)
        defer { tmux.kill() }
        #expect(tmux.waitFor { Self.keys($0.text()).count == 3 }, "\(tmux.text())")
        let screen = tmux.text()
        #expect(screen[0].contains("replay \(Self.capture) at 2×"))
        #expect(screen.contains { $0.contains("scanner replay up") && $0.contains("clients -") })
        #expect(screen.contains { $0.hasPrefix("state  RED FLAG") })
        let pid = try #require(KioskTmuxTests.kioskPID(tmux))
        kill(pid, SIGTERM)
        #expect(tmux.waitFor { $0.text().contains("EXIT=0") }, "\(tmux.text())")
        #expect(tmux.display("#{alternate_on}") == "0")
    }

    @Test func onceOnAReplayPrintsTheStateAtTheEndOfTheCapture() throws {
        let result = try BeacondProcess.run(["watch", "--replay", Self.capture, "--once", "--all", "--sort", "mode"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(!result.stdout.contains("\u{1B}"))
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first?.contains("replay \(Self.capture) at max speed") == true)
        // Played to its end: the scanner is gone, the last records are 0 to 1 s old.
        #expect(lines.contains { $0.contains("scanner replay finished") })
        #expect(Self.keys(lines) == ["zone 2", "zone 3", "zone 1"])
        #expect(lines.contains { $0.hasPrefix("4A:11:22:33:44:55  random") })
    }

    @Test func badUsageAndBadCapturesExitWithTheirCodes() throws {
        let speed = try BeacondProcess.run(["watch", "--speed", "2"])
        #expect(speed.status == 64)
        #expect(speed.stderr.contains("--speed needs --replay FILE"))
        let badSpeed = try BeacondProcess.run(["watch", "--replay", Self.capture, "--speed", "fast"])
        #expect(badSpeed.status == 64)
        // A missing file is a bad flag (the config key's check); an unreadable capture a failure.
        let missing = try BeacondProcess.run(["watch", "--replay", "/nonexistent/capture.btsnoop", "--once"])
        #expect(missing.status == 64)
        #expect(missing.stderr.contains(#"cannot read "/nonexistent/capture.btsnoop""#))
        let garbage = BeacondProcess.temporaryFile("watch-garbage.btsnoop")
        try Data("not a capture at all, not even close".utf8).write(to: URL(fileURLWithPath: garbage))
        let unreadable = try BeacondProcess.run(["watch", "--replay", garbage, "--once"])
        #expect(unreadable.status == 1)
        #expect(unreadable.stderr.contains("beacond watch: error: cannot replay: "))
    }
}

extension TmuxSession {
    /// Types `keys` into the pane.
    func sendKeys(_ keys: String) throws {
        guard let executable = Self.executable else { throw TmuxError(message: "tmux is not installed") }
        let arguments = ["-L", server, "send-keys", "-t", "kiosk", keys]
        let result = try BeacondProcess.run(URL(fileURLWithPath: executable), arguments)
        guard result.status == 0 else { throw TmuxError(message: "send-keys failed: \(result.stderr)") }
    }
}
