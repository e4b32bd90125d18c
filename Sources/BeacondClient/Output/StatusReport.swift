import Foundation

/// The readable form of a `{"type":"status"}` message (`StatusMessage`). Every string from the daemon is escaped,
/// so nothing that came from the network or the air can drive the terminal.
package enum StatusReport {
    package static func render(_ status: StatusMessage) -> String {
        var out = ""
        let state = status.state
        var header = "beacond \(TerminalText.escaped(status.version))  protocol \(status.protocolVersion)"
        header += "  up \(duration(status.uptime))"
        header += "  seq \(state.seq)"
        out += header + "\n\n"

        var mode = TerminalText.escaped(state.mode) + "  source " + TerminalText.escaped(state.source)
        if let zone = state.zone {
            mode += "  zone \(zone)"
            // Configured names come from a file, but the status may come from any socket.
            if let name = state.zoneName { mode += " (" + TerminalText.escaped(name) + ")" }
        }
        out += line("state", mode)
        if let beacon = state.beacon {
            out += line("", "beacon " + TerminalText.escaped(beacon.key))
        }
        out += line("remote", remote(status.remote))
        if let error = status.remote?.lastError {
            out += line("", "last error: " + TerminalText.escaped(error))
        }
        var health = TerminalText.escaped(status.scanner.backend) + " " + status.scanner.stateInWords
        if let hci = status.hci, let mode = hci.mode {
            health += " (\(TerminalText.escaped(mode)) scanning, \(hci.reports) reports, \(hci.restarts) restarts)"
        }
        out += line("scanner", health)
        if let filter = status.hci?.kernelFilter {
            var text = "kernel filter " + TerminalText.escaped(filter.state)
            text += " (\(filter.lifts) lifted for clients, \(filter.probes) silence probes)"
            if let failure = filter.failure { text += ": " + TerminalText.escaped(failure) }
            out += line("", text)
        }
        if status.scanner.adapters.count > 1 {
            for adapter in status.scanner.adapters {
                var text = TerminalText.escaped(adapter.name) + " " + adapter.state.rawValue
                if let reports = adapter.reports { text += ", \(reports) reports" }
                if let restarts = adapter.restarts { text += ", \(restarts) restarts" }
                if let reconnects = adapter.reconnects { text += ", \(reconnects) reconnects" }
                out += line("", text)
            }
            if let copies = status.scan?.copies {
                out += line(
                    "", "\(copies.dropped) copies heard on a second adapter dropped, \(copies.handovers) handovers")
            }
        }
        if let detail = status.scanner.detail {
            out += line("", TerminalText.escaped(detail))
        }
        if let server = status.server {
            var clients = "\(server.clients) of \(server.maxClients)"
            clients += ", \(server.rejectedClients) refused"
            clients += ", \(server.evictedClients) closed for fair share"
            clients += ", \(server.droppedLines) lines dropped"
            clients += ", \(server.disconnectedSlow) slow disconnected"
            clients += ", \(server.errors) errors"
            out += line("clients", clients)
        }
        if let mqtt = status.mqtt { out += line("mqtt", self.mqtt(mqtt)) }
        if let beacon = status.beacon { out += line("beacon", beacon.summary) }
        if let config = status.config { out += line("config", self.config(config)) }
        let counters = status.counters
        var shown = [
            ("signals", counters.signals), ("accepted", counters.accepted),
            ("rejected_frames", counters.rejectedFrames), ("contests", counters.contests),
            ("expired", counters.expired), ("published", counters.published),
            ("remote_fetches", counters.remoteFetches), ("remote_failures", counters.remoteFailures),
        ]
        // Older daemons do not count user beacons.
        if let userBeacons = counters.userBeacons { shown.insert(("user_beacons", userBeacons), at: 3) }
        out += line("counters", shown.map { "\($0.0) \($0.1)" }.joined(separator: ", "))

        out += list("active overrides", status.overrides, omitted: status.overridesOmitted)
        out += list("beacons heard", status.beacons, omitted: status.beaconsOmitted)
        return out
    }

    /// A titled beacon table; the daemon lists at most 256 entries and counts the rest as omitted.
    private static func list(_ title: String, _ beacons: [BeaconReport], omitted: Int) -> String {
        let more = max(0, omitted)
        let (total, overflow) = beacons.count.addingReportingOverflow(more)
        var out = "\n\(title) (\(overflow ? beacons.count : total))\n"
        if !beacons.isEmpty { out += table(beacons) }
        if more > 0 { out += "  … \(more) more not shown\n" }
        return out
    }

    /// The beacon table: one beacon shape, whether from `overrides` or `beacons`.
    static func table(_ beacons: [BeaconReport]) -> String {
        let headers = ["KEY", "KIND", "ZONE", "MODE", "RSSI", "DIST", "TTL LEFT", "SEQ", "LAST SEEN", "STATUS"]
        let rightAligned: Set<Int> = [2, 4, 5, 6, 7, 8]
        var rows = [headers]
        for beacon in beacons {
            var status = beacon.active ? "active" : "heard"
            if beacon.held { status += ", held" }
            if beacon.contested { status += ", CONTESTED (possible spoofing)" }
            if let temperature = beacon.temperature { status += ", \(temperature)°C" }
            if let rejected = beacon.rejected { status = "rejected: " + TerminalText.escaped(rejected) }
            rows.append([
                TerminalText.escaped(beacon.key), TerminalText.escaped(beacon.kind), "\(beacon.zone)",
                TerminalText.escaped(beacon.mode),
                beacon.rssi.map { "\($0) dBm" } ?? "-",
                finite(beacon.distance).map { String(format: "%.1f m", $0) } ?? "-",
                finite(beacon.ttlLeft).map { String(format: "%.1f s", $0) } ?? "-",
                "\(beacon.sequence)",
                finite(beacon.lastSeen).map { String(format: "%.1f s ago", $0) } ?? "-",
                status,
            ])
        }
        var widths = [Int](repeating: 0, count: headers.count)
        for row in rows {
            for (index, cell) in row.enumerated() { widths[index] = max(widths[index], cell.count) }
        }
        var out = ""
        for row in rows {
            var cells: [String] = []
            for (index, cell) in row.enumerated() {
                let pad = String(repeating: " ", count: widths[index] - cell.count)
                cells.append(rightAligned.contains(index) ? pad + cell : cell + pad)
            }
            var rendered = "  " + cells.joined(separator: "  ")
            while rendered.last == " " { rendered.removeLast() }
            out += rendered + "\n"
        }
        return out
    }

    /// `mqtt://broker:1883 node kiosk-7, connected, 2 reconnects, states 40 sent 3 coalesced, sightings …`
    private static func mqtt(_ mqtt: MqttStatus) -> String {
        var text = TerminalText.escaped(withoutCredentials(mqtt.url)) + " node " + TerminalText.escaped(mqtt.node)
        text += mqtt.connected ? ", connected" : ", NOT connected"
        text += ", \(mqtt.reconnects) reconnects"
        text += ", states \(mqtt.publishedStates) sent \(mqtt.coalescedStates) coalesced"
        text += ", sightings \(mqtt.publishedSightings) sent \(mqtt.droppedSightings) dropped"
        if !mqtt.connected, let error = mqtt.lastError { text += ", last error: " + TerminalText.escaped(error) }
        return text
    }

    /// A URL with any `user:password@` cut out. The daemon never puts one there (`mqtt.url` refuses
    /// credentials), but a status may come from any socket.
    private static func withoutCredentials(_ url: String) -> String {
        guard let scheme = url.range(of: "://") else { return url }
        let rest = url[scheme.upperBound...]
        let authority = rest.prefix { $0 != "/" }
        guard let at = authority.lastIndex(of: "@") else { return url }
        return String(url[..<scheme.upperBound]) + String(rest[rest.index(after: at)...])
    }

    /// `/etc/beacond/beacond.yaml sha256 0123456789ab, loaded 5m03s ago, 2 reloads, 1 refused`, then
    /// the first problem of a refusal that is still the latest reload's outcome.
    private static func config(_ config: ConfigStatus) -> String {
        var text = config.path.map(TerminalText.escaped) ?? "no file (built-in defaults and flags)"
        if let digest = config.sha256 { text += " sha256 " + TerminalText.escaped(String(digest.prefix(12))) }
        text += ", loaded \(duration(config.loadedAge)) ago"
        text += ", \(config.reloads) reloads, \(config.reloadFailures) refused"
        if let failure = config.lastFailure {
            let lines = failure.split(separator: "\n", omittingEmptySubsequences: true)
            let first = lines.first.map { TerminalText.escaped(String($0), limit: ConfigStatus.maxFailureLength) } ?? ""
            text += "; last reload refused: " + first + (lines.count > 1 ? " …" : "")
        }
        return text
    }

    private static func remote(_ remote: RemoteReport?) -> String {
        guard let remote else { return "none" }
        var parts = [remote.mode.map(TerminalText.escaped) ?? "-"]
        if let reported = remote.reportedMode, reported != remote.mode {
            parts.append("reported " + TerminalText.escaped(reported))
        }
        parts.append(remote.fresh ? "fresh" : "stale")
        if remote.latched { parts.append("latched") }
        if let age = finite(remote.age) { parts.append(String(format: "age %.1f s", age)) }
        if let message = remote.message, !message.isEmpty {
            parts.append("\"" + TerminalText.escaped(message) + "\"")
        }
        return parts.joined(separator: ", ")
    }

    /// A finite number, nil otherwise: the status may come from any socket.
    private static func finite(_ value: Double?) -> Double? {
        value.flatMap { $0.isFinite ? $0 : nil }
    }

    private static func line(_ label: String, _ value: String) -> String {
        label.padding(toLength: 10, withPad: " ", startingAt: 0) + value + "\n"
    }

    private static func duration(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds >= 0, seconds < 1e12 else { return "?" }
        let total = Int(seconds)
        let (hours, minutes, secs) = (total / 3600, total / 60 % 60, total % 60)
        if hours > 0 { return "\(hours)h\(String(format: "%02d", minutes))m\(String(format: "%02d", secs))s" }
        if minutes > 0 { return "\(minutes)m\(String(format: "%02d", secs))s" }
        return String(format: "%.1fs", seconds)
    }
}
