import Foundation
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// Beacons and statuses for `beacond watch`'s table tests.
enum WatchSamples {
    static func beacon(
        zone: Int = 1, sourceID: Int? = nil, mode: String = "normal", rssi: Int? = -60, lastSeen: Double? = 1,
        contested: Bool = false, active: Bool = false, address: String? = nil
    ) -> BeaconReport {
        let kind = sourceID == nil ? "circuit" : "staff"
        let address = address ?? String(format: "C0:FF:EE:00:00:%02X", zone)
        let name = sourceID.map { "source \($0)" } ?? "zone \(zone)"
        return BeaconReport(
            key: "\(name) @ \(address)", kind: kind, zone: zone, sourceID: sourceID, address: address, mode: mode,
            rssi: rssi, distance: 2.5, sequence: 40 + zone, ttl: 30, active: active, held: false,
            contested: contested, ttlLeft: active ? 12.25 : nil, lastSeen: lastSeen, temperature: nil, rejected: nil)
    }

    /// Zone 3 strongest, zone 2 evacuating and heard last; a staff beacon weakest and oldest.
    static let beacons = [
        beacon(zone: 2, mode: "evacuation", rssi: -70, lastSeen: 0.5, active: true),
        beacon(zone: 1, mode: "normal", rssi: -80, lastSeen: 3),
        beacon(zone: 3, mode: "safety_car", rssi: -50, lastSeen: 2, contested: true, active: true),
        beacon(zone: 3, sourceID: 7, mode: "red_flag", rssi: -90, lastSeen: 4, address: "DA:00:00:00:00:07"),
    ]

    static func status(beacons: [BeaconReport] = beacons, devices: [DeviceReport]? = nil) -> StatusMessage {
        var status = StatusMessage.sample()
        status.state.mode = "evacuation"
        status.state.source = "beacon"
        status.state.zone = 2
        status.state.zoneName = "Pit lane"
        status.state.beacon = beacons.first
        status.beacons = beacons
        status.counters.rejectedFrames = 3
        status.counters.filteredRSSI = 5
        status.remote = RemoteReport(
            mode: "normal", reportedMode: "normal", fresh: false, latched: false, restored: false, age: 95,
            message: nil, lastError: nil)
        var server = ServerStatus()
        server.clients = 4
        status.server = server
        status.devices = devices
        if devices != nil {
            status.devicesCounters = DeviceCounters(
                limit: 64, window: 10, reports: 9, displaced: 1, refused: 2, expired: 0)
        }
        return status
    }

    static func view(sort: WatchSort = .key, status: StatusMessage? = status(), all: Bool = false) -> WatchView {
        WatchView(source: "/run/beacond/beacond.sock", status: status, sort: sort, showsDevices: all)
    }

    /// The table rows' keys, top to bottom, in a plain snapshot.
    static func keys(_ snapshot: String) -> [String] {
        snapshot.split(separator: "\n").compactMap { line in
            guard let match = line.firstMatch(of: #/^[▶ ] (zone \d+|source \d+) /#) else { return nil }
            return String(match.output.1)
        }
    }
}

@Suite struct WatchScreenTests {
    @Test func eachSortOrdersTheRowsItsWay() {
        func keys(_ sort: WatchSort) -> [String] {
            WatchSamples.keys(WatchScreen.snapshot(WatchSamples.view(sort: sort)))
        }
        #expect(keys(.key) == ["zone 1", "zone 2", "zone 3", "source 7"])
        #expect(keys(.rssi) == ["zone 3", "zone 2", "zone 1", "source 7"])
        #expect(keys(.lastSeen) == ["zone 2", "zone 3", "zone 1", "source 7"])
        #expect(keys(.mode) == ["zone 2", "source 7", "zone 3", "zone 1"])
    }

    @Test func sCyclesThroughEveryOrderAndBack() {
        var sort = WatchSort.key
        var seen: [WatchSort] = []
        for _ in 0..<4 {
            seen.append(sort)
            sort = sort.next
        }
        #expect(seen == [.key, .rssi, .lastSeen, .mode])
        #expect(sort == .key)
    }

    @Test func tiesAndMissingValuesKeepATotalOrder() {
        let beacons = [
            WatchSamples.beacon(zone: 5, rssi: nil, lastSeen: nil),
            WatchSamples.beacon(zone: 4, rssi: -60, lastSeen: .nan),
            WatchSamples.beacon(zone: 6, rssi: -60, lastSeen: 1),
        ]
        #expect(WatchSort.rssi.sorted(beacons).map(\.zone) == [4, 6, 5])
        #expect(WatchSort.lastSeen.sorted(beacons).map(\.zone) == [6, 4, 5])
        #expect(WatchSort.mode.sorted(beacons).map(\.zone) == [4, 5, 6])
    }

    @Test func theSnapshotHasEveryColumnAndTheHeader() throws {
        let text = WatchScreen.snapshot(WatchSamples.view())
        let lines = text.split(separator: "\n").map(String.init)
        #expect(lines[0].hasPrefix("beacond watch  /run/beacond/beacond.sock  sort: key"))
        #expect(lines[1] == "state  EVACUATE   source beacon, zone 2 (Pit lane)  seq 1")
        #expect(lines[2] == "remote STALE 95.0s normal   scanner test up   clients 4")
        #expect(lines[3].hasPrefix("rejected frames 3  filtered rssi 5 zone 0"))
        let heading = try #require(lines.first { $0.hasPrefix("KEY") })
        let titles = ["KEY", "ADDRESS", "MODE", "RSSI", "DIST", "SEQ", "TTL", "SEEN", "NOTE"]
        #expect(heading.split(separator: " ").map(String.init) == titles)
        let zone3 = lines.first { $0.contains("zone 3 ") } ?? ""
        #expect(zone3.contains("C0:FF:EE:00:00:03"))
        #expect(zone3.contains("SC"))
        #expect(zone3.contains(" -50 ████▏"))
        #expect(zone3.contains("2.5 m"))
        #expect(zone3.contains(" 43 "))
        #expect(zone3.contains("12.2s") || zone3.contains("12.3s"))
        #expect(zone3.contains(" 2.0s"))
        #expect(zone3.hasSuffix("contested active"))
        // The beacon deciding the state is marked; the others are not.
        #expect(lines.filter { $0.hasPrefix("▶ ") } == lines.filter { $0.contains("C0:FF:EE:00:00:02") })
        #expect(!(lines.first { $0.contains("zone 1 ") } ?? "").contains("contested"))
    }

    /// Several adapters (issue 32): the whole and each adapter, in `watch` and in `status`.
    @Test func aDegradedScannerNamesEachAdapter() {
        var status = WatchSamples.status()
        status.scanner = ScannerStatus(
            backend: "hci", state: .degraded, detail: "hci2: adapter hci2 is gone; retrying in 2 s",
            adapters: [
                AdapterHealth(name: "hci1", state: .up, reports: 900, restarts: 1, reconnects: 0),
                AdapterHealth(name: "hci2", state: .recovering, detail: "adapter hci2 is gone", reports: 400),
            ])
        status.scan = ScanStatus(
            reports: 1300, droppedSignals: 0,
            copies: CopyFilterStatus(passed: 900, dropped: 400, handovers: 2, evictions: 0))
        let lines = WatchScreen.snapshot(WatchSamples.view(status: status)).split(separator: "\n").map(String.init)
        #expect(
            lines[2]
                == "remote STALE 95.0s normal   scanner hci DEGRADED [hci1 up 1 restarts, hci2 RECOVERING]"
                + " (hci2: adapter hci2 is gone; retrying in 2 s)   clients 4")
        let report = StatusReport.render(status)
        #expect(report.contains("scanner   hci degraded"))
        #expect(report.contains("          hci1 up, 900 reports, 1 restarts, 0 reconnects"))
        #expect(report.contains("          hci2 recovering, 400 reports"))
        #expect(report.contains("          400 copies heard on a second adapter dropped, 2 handovers"))
        #expect(report.contains("          hci2: adapter hci2 is gone; retrying in 2 s"))
    }

    /// A v1 frame's temperature byte and a staff command frame's key, in `watch` and `status`.
    @Test func temperatureAndCommandFramesAreShown() {
        var warm = WatchSamples.beacon(zone: 4, mode: "red_flag", active: true)
        warm.temperature = 11
        var command = WatchSamples.beacon(zone: 0, mode: "evacuation", active: true, address: "DA:00:00:00:00:09")
        command.kind = "command"
        command.key = "command @ DA:00:00:00:00:09"
        let status = WatchSamples.status(beacons: [warm, command])
        let snapshot = WatchScreen.snapshot(WatchSamples.view(status: status))
        let rows = snapshot.split(separator: "\n")
        #expect(rows.contains { $0.contains("zone 4") && $0.contains("11°C") }, "\(snapshot)")
        #expect(rows.contains { $0.contains("command") && $0.contains("DA:00:00:00:00:09") }, "\(snapshot)")
        #expect(!rows.contains { $0.contains("source ?") }, "\(snapshot)")
        let report = StatusReport.render(status)
        #expect(report.contains("active, 11°C"), "\(report)")
        #expect(report.contains("command @ DA:00:00:00:00:09  command"), "\(report)")
    }

    @Test func theBarFillsInEighthsFromMinus100ToMinus40() {
        #expect(WatchFormat.bar(rssi: -40) == "█████")
        #expect(WatchFormat.bar(rssi: -10) == "█████")
        #expect(WatchFormat.bar(rssi: -100) == "     ")
        #expect(WatchFormat.bar(rssi: nil) == "     ")
        #expect(WatchFormat.bar(rssi: -70) == "██▌  ")
        #expect(WatchFormat.bar(rssi: -97) == "▎    ")
        // Numbers from a socket never trap.
        #expect(WatchFormat.bar(rssi: .max) == "█████")
        #expect(WatchFormat.bar(rssi: .min) == "     ")
        #expect(WatchScreen.rssiCell(.min).text.hasSuffix("     "))
        #expect(WatchFormat.seconds(.infinity) == "-")
        #expect(WatchFormat.metres(1e300) == ">999 m")
    }

    static func frame(_ view: WatchView, _ colors: TerminalCapabilities.Colors) -> String {
        let frame = WatchScreen.frame(view, columns: 100, rows: 30, capabilities: .init(colors: colors))
        return String(decoding: frame, as: UTF8.self)
    }

    @Test func withoutColoursNoEscapeIsWritten() {
        let view = WatchSamples.view(all: true)
        #expect(!WatchScreen.snapshot(view).contains("\u{1B}"))
        let frame = Self.frame(view, .none)
        // Only the cursor positions of the rows: no colour (SGR) at all.
        #expect(frame.matches(of: /\x1B\[[0-9;]*m/).isEmpty)
        #expect(frame.matches(of: /\x1B\[(?:\d+;1)?H/).count == 30)
    }

    @Test func withColoursTheModesWearTheirFlags() {
        let view = WatchSamples.view()
        let frame = Self.frame(view, .truecolor)
        let red = "\u{1B}[48;2;210;0;0m"
        let amber = "\u{1B}[48;2;255;130;0m"
        #expect(frame.contains(red + "EVACUATE"))
        #expect(frame.contains(amber + "SC"))
        // "contested" in white on red, bold; "STALE" too.
        #expect(frame.contains(red + "\u{1B}[1mcontested"))
        #expect(frame.contains(red + "\u{1B}[1mSTALE"))
        #expect(Self.frame(view, .ansi16).contains("\u{1B}[41mEVACUATE"))
    }

    @Test func everyRowFitsTheTerminalAndNarrowOnesDropTheLeastImportantColumns() throws {
        let view = WatchSamples.view(all: true)
        for columns in [20, 40, 60, 80, 120] {
            let lines = WatchScreen.lines(view, columns: columns, rows: 24)
            #expect(lines.count == 24)
            for line in lines {
                let shown = line.rendered(columns: columns, capabilities: .init(colors: .none), pad: true)
                #expect(shown.count == columns)
            }
        }
        let narrow = WatchScreen.lines(view, columns: 60, rows: 24).map(\.text)
        let heading = try #require(narrow.first { $0.hasPrefix("KEY") })
        #expect(!heading.contains("SEQ") && !heading.contains("DIST"))
        #expect(heading.contains("MODE") && heading.contains("RSSI") && heading.contains("NOTE"))
        #expect(narrow.contains { $0.contains("contested") })
    }

    @Test func aShortTerminalSaysHowManyRowsAreHidden() {
        let many = (1...30).map { WatchSamples.beacon(zone: $0) }
        let view = WatchSamples.view(status: WatchSamples.status(beacons: many))
        let lines = WatchScreen.lines(view, columns: 100, rows: 20)
        #expect(lines.count == 20)
        // 4 header rows, a blank, the title, the heading, 12 beacons and the line saying so.
        #expect(lines.last?.text.contains("… 18 more rows") == true)
    }

    @Test func aShortTerminalSharesItsRowsBetweenBeaconsAndDevices() {
        let many = (1...30).map { WatchSamples.beacon(zone: $0) }
        let devices = (0..<10).map {
            DeviceReport(
                address: "4A:00:00:00:00:0\($0)", addressType: "random", rssi: -60, companyID: nil,
                lastSeen: 1, reports: 1)
        }
        let view = WatchSamples.view(status: WatchSamples.status(beacons: many, devices: devices), all: true)
        let lines = WatchScreen.lines(view, columns: 100, rows: 24).map(\.text)
        #expect(lines.count == 24)
        // 20 rows below the header: 10 each, of which a blank, a title, a heading and the count.
        #expect(lines.filter { $0.contains("… 24 more rows") }.count == 1)
        #expect(lines.last?.contains("… 4 more rows") == true)
        #expect(lines.filter { $0.hasPrefix("4A:00") }.count == 6)
    }

    @Test func aLostSourceShowsNoSignalAndNoTable() {
        var view = WatchSamples.view(status: nil)
        view.problem = "daemon unreachable: nobody listens on the socket (is beacond running?)"
        let text = WatchScreen.snapshot(view)
        #expect(text.contains("state  NO SIGNAL   daemon unreachable: nobody listens"))
        #expect(!text.contains("KEY"))
        #expect(!text.contains("zone"))
    }

    @Test func textFromTheDaemonIsEscaped() {
        var status = WatchSamples.status()
        status.state.zoneName = "Pit\u{1B}[2Jlane\u{202E}"
        status.beacons[0].rejected = "bad\u{7}"
        let text = WatchScreen.snapshot(WatchSamples.view(status: status))
        #expect(!text.contains("\u{1B}") && !text.contains("\u{7}") && !text.contains("\u{202E}"))
        #expect(text.contains(#"Pit\u{1b}[2Jlane\u{202e}"#))
    }

    @Test func allListsTheOtherDevicesStrongestFirst() {
        let devices = [
            DeviceReport(
                address: "4A:00:00:00:00:01", addressType: "random", rssi: -90, companyID: 76, lastSeen: 1, reports: 3),
            DeviceReport(
                address: "4A:00:00:00:00:02", addressType: "public", rssi: -40, companyID: nil, lastSeen: 2,
                reports: 9),
        ]
        let text = WatchScreen.snapshot(WatchSamples.view(status: WatchSamples.status(devices: devices), all: true))
        let lines = text.split(separator: "\n").map(String.init)
        let title = lines.firstIndex { $0.hasPrefix("other devices 2") } ?? 0
        #expect(lines[title].contains("strongest 64 heard in the last 10.0s, 2 weaker not listed, 1 displaced"))
        let titles = ["ADDRESS", "TYPE", "RSSI", "SEEN", "REPORTS", "COMPANY"]
        #expect(lines[title + 1].split(separator: " ").map(String.init) == titles)
        #expect(lines[title + 2].hasPrefix("4A:00:00:00:00:02  public"))
        #expect(lines[title + 3].hasPrefix("4A:00:00:00:00:01  random"))
        #expect(lines[title + 3].hasSuffix("0x004C"))
        // Without --all the section is not there; from an older daemon it says why.
        let withoutAll = WatchScreen.snapshot(WatchSamples.view(status: WatchSamples.status(devices: devices)))
        #expect(!withoutAll.contains("other devices"))
        #expect(WatchScreen.snapshot(WatchSamples.view(all: true)).contains("does not report them"))
    }

    @Test func anEmptyListSaysTheKernelFilterWasLiftedOnlyLately() {
        var status = WatchSamples.status(devices: [])
        status.devicesCounters?.listening = 0.4
        #expect(
            WatchScreen.snapshot(WatchSamples.view(status: status, all: true))
                .contains("none yet: listening for other devices for 0.4s"))
        status.devicesCounters?.listening = 12
        #expect(WatchScreen.snapshot(WatchSamples.view(status: status, all: true)).contains("none heard recently"))
    }

    @Test func watchBlocksItsSignalsLikeTheKiosk() {
        #expect(DaemonSignals.handled(byCommandIn: ["beacond", "watch", "--all"]) == DaemonSignals.kioskHandled)
    }

    /// The drawing part of a refresh, for a full daemon: 256 beacons and 64 devices, 200×60.
    @Test func aFullFrameIsCheapToDraw() {
        let beacons = (0..<256).map { WatchSamples.beacon(zone: $0, rssi: -40 - $0 % 60, lastSeen: Double($0) / 10) }
        let devices = (0..<64).map {
            DeviceReport(
                address: String(format: "4A:00:00:00:00:%02X", $0), addressType: "random", rssi: -50 - $0,
                companyID: 76, lastSeen: 1, reports: $0)
        }
        let status = WatchSamples.status(beacons: beacons, devices: devices)
        let view = WatchSamples.view(sort: .rssi, status: status, all: true)
        let capabilities = TerminalCapabilities(colors: .truecolor)
        let started = MonotonicClock.micros()
        var bytes = 0
        for _ in 0..<20 { bytes += WatchScreen.frame(view, columns: 200, rows: 60, capabilities: capabilities).count }
        let perFrame = Double(MonotonicClock.micros() - started) / 20 / 1000
        let figures = "\(String(format: "%.2f", perFrame)) ms, \(bytes / 20) bytes"
        print("watch frame (256 beacons, 64 devices, 200x60): \(figures)")
        #expect(perFrame < 100)
    }
}
