/// `beacond watch`'s screen, as pure functions of a `WatchView` and a size: the header (fused
/// state, remote, scanner, clients, rejected-frame counters), the beacon table in the chosen
/// order, and with `--all` the other devices heard. `frame` is what the terminal gets at 4 Hz;
/// `snapshot` is the plain text printed without a TTY or with `--once`.
///
/// Every string from the daemon is escaped (`WatchLine.safe`) before it is shown.
package enum WatchScreen {
    /// Sizes beyond these are drawn at these.
    package static let maxColumns = 1024
    package static let maxRows = 512
    /// The width of a plain snapshot: wide enough that no column is left out.
    package static let snapshotColumns = 400

    /// The screen's rows for `columns` × `rows` cells (`rows` nil: as many as the content needs).
    package static func lines(_ view: WatchView, columns: Int, rows: Int?) -> [WatchLine] {
        let header = self.header(view)
        guard let status = view.status else { return fill(header, rows: rows) }
        guard let rows else {
            let devices = view.showsDevices ? deviceSection(status, width: columns, lines: nil) : []
            return header + beaconSection(status, sort: view.sort, width: columns, lines: nil) + devices
        }
        // Only the rows that fit are laid out: a full daemon lists 256 beacons.
        // A blank, the title and the heading, then a row each; "none heard" takes the heading's place.
        let beaconsNeed = status.beacons.isEmpty ? 3 : 3 + status.beacons.count
        let devicesNeed = view.showsDevices ? status.devices.map { $0.isEmpty ? 3 : 3 + $0.count } ?? 2 : 0
        let room = max(0, rows - header.count)
        // Each section gets what it needs when both fit; else the beacons keep at least half.
        let devicesShare = beaconsNeed + devicesNeed <= room ? devicesNeed : min(devicesNeed, room / 2)
        let beaconRows = min(beaconsNeed, room - devicesShare)
        let deviceRows = min(devicesNeed, room - beaconRows)
        let beacons = beaconSection(status, sort: view.sort, width: columns, lines: beaconRows)
        let devices = view.showsDevices ? deviceSection(status, width: columns, lines: deviceRows) : []
        return fill(header + beacons + devices, rows: rows)
    }

    /// The bytes of one terminal frame: every row positioned and padded to the full width, so it
    /// overwrites the previous frame without clearing the screen (no flicker).
    package static func frame(
        _ view: WatchView, columns: Int, rows: Int, capabilities: TerminalCapabilities
    ) -> [UInt8] {
        let columns = min(max(columns, 0), maxColumns)
        let rows = min(max(rows, 0), maxRows)
        var frame = ""
        for (index, line) in lines(view, columns: columns, rows: rows).enumerated() {
            frame += index == 0 ? "\u{1B}[H" : "\u{1B}[\(index + 1);1H"
            frame += line.rendered(columns: columns, capabilities: capabilities, pad: true)
        }
        return Array(frame.utf8)
    }

    /// The plain snapshot: no escape sequence, no trailing spaces, one "\n" per row.
    package static func snapshot(_ view: WatchView, columns: Int = snapshotColumns) -> String {
        let plain = TerminalCapabilities(colors: .none)
        var out = ""
        for line in lines(view, columns: columns, rows: nil) {
            var text = line.rendered(columns: columns, capabilities: plain, pad: false)
            while text.unicodeScalars.last == " " { text.unicodeScalars.removeLast() }
            out += text + "\n"
        }
        return out
    }

    // MARK: Header

    static func header(_ view: WatchView) -> [WatchLine] {
        var title = WatchLine("beacond watch", .heading)
        title.append("  " + WatchLine.safe(view.source) + "  sort: " + view.sort.rawValue)
        if view.interactive { title.append("   s: sort  q: quit", .dim) }
        guard let status = view.status else {
            var line = WatchLine("state ")
            line.append(" NO SIGNAL ", .flag(.noSignal))
            line.append("  " + WatchLine.safe(view.problem ?? "waiting for the first status"))
            return [title, line]
        }
        let state = status.state
        var stateLine = WatchLine("state ")
        let flag = KioskView.Flag(mode: state.mode)
        stateLine.append(" " + (flag?.headline ?? WatchLine.safe(state.mode).uppercased()) + " ", .flag(flag))
        stateLine.append("  source " + WatchLine.safe(state.source))
        if let zone = state.zone {
            stateLine.append(", zone \(zone)")
            if let name = state.zoneName { stateLine.append(" (" + WatchLine.safe(name) + ")") }
        }
        stateLine.append("  seq \(state.seq)")

        var health = WatchLine("remote ")
        if let remote = status.remote {
            if remote.fresh { health.append("fresh") } else { health.append("STALE", .alert) }
            if let age = remote.age { health.append(" " + WatchFormat.seconds(age)) }
            if let mode = remote.mode { health.append(" " + WatchLine.safe(mode)) }
            if remote.latched { health.append(" latched") }
        } else {
            health.append("none")
        }
        health.append("   scanner " + WatchLine.safe(status.scanner.backend) + " ")
        switch status.scanner.state {
        case .up: health.append("up")
        case .degraded: health.append("DEGRADED", .alert)
        case .down: health.append("DOWN", .alert)
        case .none: health.append(status.scanner.stateInWords)
        }
        if status.scanner.adapters.count > 1 {
            for (index, adapter) in status.scanner.adapters.enumerated() {
                health.append((index == 0 ? " [" : ", ") + WatchLine.safe(adapter.name) + " ")
                switch adapter.state {
                case .up, .none: health.append(adapter.state == .up ? "up" : "off")
                case .down, .recovering: health.append(adapter.state.rawValue.uppercased(), .alert)
                }
                if let restarts = adapter.restarts, restarts > 0 { health.append(" \(restarts) restarts") }
            }
            health.append("]")
        }
        if let detail = status.scanner.detail, status.scanner.state != .up {
            health.append(" (" + WatchLine.safe(detail) + ")")
        }
        health.append("   clients " + (status.server.map { "\($0.clients)" } ?? "-"))

        let counters = status.counters
        var rejected = WatchLine("rejected frames \(counters.rejectedFrames)")
        rejected.append(
            "  filtered rssi \(counters.filteredRSSI) zone \(counters.filteredZone) allow \(counters.filteredAllow)"
                + " distance \(counters.filteredDistance) mode \(counters.filteredUnknownMode)"
                + "  refused \(counters.refused)  contests \(counters.contests)")
        if let userBeacons = counters.userBeacons { rejected.append("  user beacons \(userBeacons)") }
        guard let beacon = status.beacon else { return [title, stateLine, health, rejected] }
        let transmitter = WatchLine(
            "beacon " + WatchLine.safe(beacon.summary), beacon.state == "down" ? .alert : .plain)
        return [title, stateLine, health, rejected, transmitter]
    }

    // MARK: Beacons

    /// The beacons in `lines` rows at most (nil: all of them).
    static func beaconSection(_ status: StatusMessage, sort: WatchSort, width: Int, lines: Int?) -> [WatchLine] {
        let sorted = sort.sorted(status.beacons)
        var title = WatchLine("beacons \(sorted.count)", .heading)
        if status.beaconsOmitted > 0 { title.append("  (\(status.beaconsOmitted) more not listed by the daemon)") }
        guard !sorted.isEmpty else {
            return cut([WatchLine(), title, WatchLine("  none heard recently", .dim)], to: lines, total: 0)
        }
        let beacons = sorted.prefix(shownRows(sorted.count, lines: lines))
        let deciding = status.state.beacon?.key
        var key = WatchTable.Column(title: "KEY", maxWidth: 24, keep: 11)
        var address = WatchTable.Column(title: "ADDRESS", keep: 4)
        var mode = WatchTable.Column(title: "MODE", keep: 10)
        var rssi = WatchTable.Column(title: "RSSI", keep: 7)
        var distance = WatchTable.Column(title: "DIST", rightAligned: true, keep: 2)
        var sequence = WatchTable.Column(title: "SEQ", rightAligned: true, keep: 1)
        var ttl = WatchTable.Column(title: "TTL", rightAligned: true, keep: 5)
        var seen = WatchTable.Column(title: "SEEN", rightAligned: true, keep: 3)
        var note = WatchTable.Column(title: "NOTE", keep: 9)
        for beacon in beacons {
            let name =
                switch beacon.kind {
                case "circuit": "zone \(beacon.zone)"
                case "command": "command"
                default: "source \(beacon.sourceID.map { "\($0)" } ?? "?")"
                }
            key.cells.append(WatchLine((beacon.key == deciding ? "▶ " : "  ") + name))
            address.cells.append(WatchLine(WatchLine.safe(beacon.address)))
            let flag = KioskView.Flag(mode: beacon.mode)
            mode.cells.append(WatchLine(flag?.headline ?? WatchLine.safe(beacon.mode).uppercased(), .flag(flag)))
            rssi.cells.append(rssiCell(beacon.rssi))
            distance.cells.append(WatchLine(WatchFormat.metres(beacon.distance)))
            sequence.cells.append(WatchLine("\(beacon.sequence)"))
            ttl.cells.append(WatchLine(WatchFormat.seconds(beacon.ttlLeft)))
            seen.cells.append(WatchLine(WatchFormat.seconds(beacon.lastSeen)))
            note.cells.append(noteCell(beacon))
        }
        let table = WatchTable(columns: [key, address, mode, rssi, distance, sequence, ttl, seen, note])
        return cut([WatchLine(), title] + table.lines(width: width), to: lines, total: sorted.count)
    }

    /// `-61 ████▏`: the number and a small bar.
    static func rssiCell(_ rssi: Int?) -> WatchLine {
        guard let rssi else { return WatchLine("-") }
        let number = "\(rssi)"
        var cell = WatchLine(String(repeating: " ", count: max(0, 4 - number.count)) + number + " ")
        cell.append(WatchFormat.bar(rssi: rssi), .bar(WatchFormat.barLevel(rssi: rssi)))
        return cell
    }

    static func noteCell(_ beacon: BeaconReport) -> WatchLine {
        var cell = WatchLine()
        var parts: [(String, WatchLine.Style)] = []
        if beacon.contested { parts.append(("contested", .alert)) }
        if beacon.held { parts.append(("held", .plain)) }
        if beacon.active { parts.append(("active", .plain)) }
        if let temperature = beacon.temperature { parts.append(("\(temperature)°C", .plain)) }
        if let rejected = beacon.rejected { parts.append(("rejected: " + WatchLine.safe(rejected), .dim)) }
        for (index, part) in parts.enumerated() {
            if index > 0 { cell.append(" ") }
            cell.append(part.0, part.1)
        }
        return cell
    }

    // MARK: Other devices

    /// The other devices in `lines` rows at most (nil: all of them).
    static func deviceSection(_ status: StatusMessage, width: Int, lines: Int?) -> [WatchLine] {
        guard let listed = status.devices else {
            let older = WatchLine("other devices: this daemon does not report them (older version)", .dim)
            return cut([WatchLine(), older], to: lines, total: 0)
        }
        let sorted = WatchSort.sorted(devices: listed)
        var title = WatchLine("other devices \(sorted.count)", .heading)
        if let counters = status.devicesCounters {
            title.append(
                "  strongest \(counters.limit) heard in the last \(WatchFormat.seconds(counters.window)),"
                    + " \(counters.refused) weaker not listed, \(counters.displaced) displaced")
        }
        guard !sorted.isEmpty else {
            var none = WatchLine("  none heard recently", .dim)
            // The kernel filter was lifted for this look only lately: the list is still filling.
            if let counters = status.devicesCounters, let listening = counters.listening, listening < counters.window {
                none = WatchLine("  none yet: listening for other devices for \(WatchFormat.seconds(listening))", .dim)
            }
            return cut([WatchLine(), title, none], to: lines, total: 0)
        }
        let devices = sorted.prefix(shownRows(sorted.count, lines: lines))
        var address = WatchTable.Column(title: "ADDRESS", keep: 9)
        var type = WatchTable.Column(title: "TYPE", keep: 2)
        var rssi = WatchTable.Column(title: "RSSI", keep: 8)
        var seen = WatchTable.Column(title: "SEEN", rightAligned: true, keep: 5)
        var reports = WatchTable.Column(title: "REPORTS", rightAligned: true, keep: 1)
        var company = WatchTable.Column(title: "COMPANY", keep: 3)
        for device in devices {
            address.cells.append(WatchLine(WatchLine.safe(device.address)))
            type.cells.append(WatchLine(WatchLine.safe(device.addressType)))
            rssi.cells.append(rssiCell(device.rssi))
            seen.cells.append(WatchLine(WatchFormat.seconds(device.lastSeen)))
            reports.cells.append(WatchLine("\(device.reports)"))
            company.cells.append(WatchLine(device.companyID.map(companyText) ?? "-"))
        }
        let table = WatchTable(columns: [address, type, rssi, seen, reports, company])
        return cut([WatchLine(), title] + table.lines(width: width), to: lines, total: sorted.count)
    }

    /// `0x004C`; a number out of the 16-bit range (from a socket) as it is.
    static func companyText(_ id: Int) -> String {
        guard (0...0xFFFF).contains(id) else { return "\(id)" }
        let hex = String(id, radix: 16, uppercase: true)
        return "0x" + String(repeating: "0", count: 4 - hex.count) + hex
    }

    // MARK: Layout

    /// The table rows of `count` shown in a section of `lines` rows: a blank, the title and the
    /// heading come first, and when not all fit the last row says how many are hidden.
    static func shownRows(_ count: Int, lines: Int?) -> Int {
        guard let lines, count + 3 > lines else { return count }
        return max(0, lines - 4)
    }

    /// `section` (a blank, title, heading and table rows of `total` entries) in `rows` rows: whole
    /// when it fits, else its first rows and a line saying how many entries are hidden.
    static func cut(_ section: [WatchLine], to rows: Int?, total: Int) -> [WatchLine] {
        guard let rows else { return section }
        guard total > 0 else { return Array(section.prefix(max(0, rows))) }
        let shown = max(0, section.count - 3)
        guard section.count > rows || shown < total else { return section }
        guard rows > 0 else { return [] }
        let kept = Array(section.prefix(rows - 1))
        let hidden = total - max(0, kept.count - 3)
        let more = WatchLine("  … \(hidden) more rows (a taller terminal shows them)", .dim)
        return kept + [more]
    }

    private static func fill(_ lines: [WatchLine], rows: Int?) -> [WatchLine] {
        guard let rows else { return lines }
        if lines.count >= rows { return Array(lines.prefix(rows)) }
        return lines + Array(repeating: WatchLine(), count: rows - lines.count)
    }
}
