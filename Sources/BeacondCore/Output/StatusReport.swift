import Foundation

/// The readable form of a `{"type":"status"}` object. Every string from the daemon is escaped,
/// so nothing that came from the network or the air can drive the terminal.
package enum StatusReport {
    package static func render(_ status: [String: Any]) -> String {
        var out = ""
        let state = status["state"] as? [String: Any] ?? [:]
        var header = "beacond \(text(status["version"]))  protocol \(text(status["protocol"]))"
        if let uptime = number(status["uptime_s"]) { header += "  up \(duration(uptime))" }
        header += "  seq \(text(state["seq"]))"
        out += header + "\n\n"

        var mode = text(state["mode"]) + "  source " + text(state["source"])
        if let zone = state["zone"], !(zone is NSNull) { mode += "  zone \(text(zone))" }
        out += line("state", mode)
        if let beacon = state["beacon"] as? [String: Any] {
            out += line("", "beacon " + text(beacon["key"]))
        }
        out += line("remote", remote(status["remote"] as? [String: Any]))
        if let remote = status["remote"] as? [String: Any], let error = remote["last_error"] as? String {
            out += line("", "last error: " + TerminalText.escaped(error))
        }
        if let scanner = status["scanner"] as? [String: Any] {
            var health = text(scanner["backend"]) + " " + text(scanner["state"])
            if let hci = status["hci"] as? [String: Any], let mode = hci["mode"] as? String {
                health += " (\(mode) scanning, \(text(hci["reports"])) reports, \(text(hci["restarts"])) restarts)"
            }
            out += line("scanner", health)
            if let detail = scanner["detail"] as? String {
                out += line("", TerminalText.escaped(detail))
            }
        }
        if let server = status["server"] as? [String: Any] {
            var clients = "\(text(server["clients"])) of \(text(server["max_clients"]))"
            clients += ", \(text(server["rejected_clients"])) refused"
            if let evicted = server["evicted_clients"] { clients += ", \(text(evicted)) closed for fair share" }
            clients += ", \(text(server["dropped_lines"])) lines dropped"
            clients += ", \(text(server["disconnected_slow"])) slow disconnected"
            clients += ", \(text(server["errors"])) errors"
            out += line("clients", clients)
        }
        if let counters = status["counters"] as? [String: Any] {
            let names = ["signals", "accepted", "rejected_frames", "contests", "expired", "published",
                         "remote_fetches", "remote_failures"]
            out += line("counters", names.compactMap { name in counters[name].map { "\(name) \(text($0))" } }
                .joined(separator: ", "))
        }

        out += list("active overrides", status["overrides"], omitted: status["overrides_omitted"])
        out += list("beacons heard", status["beacons"], omitted: status["beacons_omitted"])
        return out
    }

    /// A titled beacon table; the daemon lists at most 256 entries and counts the rest as omitted.
    private static func list(_ title: String, _ entries: Any?, omitted: Any?) -> String {
        let beacons = entries as? [[String: Any]] ?? []
        let more = max(0, (omitted as? Int) ?? 0)
        let (total, overflow) = beacons.count.addingReportingOverflow(more)
        var out = "\n\(title) (\(overflow ? beacons.count : total))\n"
        if !beacons.isEmpty { out += table(beacons) }
        if more > 0 { out += "  … \(more) more not shown\n" }
        return out
    }

    /// The beacon table: one beacon shape, whether from `overrides` or `beacons`.
    static func table(_ beacons: [[String: Any]]) -> String {
        let headers = ["KEY", "KIND", "ZONE", "MODE", "RSSI", "DIST", "TTL LEFT", "SEQ", "LAST SEEN", "STATUS"]
        let rightAligned: Set<Int> = [2, 4, 5, 6, 7, 8]
        var rows = [headers]
        for beacon in beacons {
            var status = (beacon["active"] as? Bool ?? false) ? "active" : "heard"
            if beacon["held"] as? Bool == true { status += ", held" }
            if beacon["contested"] as? Bool == true { status += ", CONTESTED (possible spoofing)" }
            if let rejected = beacon["rejected"] as? String { status = "rejected: " + TerminalText.escaped(rejected) }
            rows.append([
                text(beacon["key"]), text(beacon["kind"]), text(beacon["zone"]), text(beacon["mode"]),
                integer(beacon["rssi"]).map { "\($0) dBm" } ?? "-",
                number(beacon["distance_m"]).map { String(format: "%.1f m", $0) } ?? "-",
                number(beacon["ttl_left_s"]).map { String(format: "%.1f s", $0) } ?? "-",
                text(beacon["seq"]),
                number(beacon["last_seen_s"]).map { String(format: "%.1f s ago", $0) } ?? "-",
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

    private static func remote(_ remote: [String: Any]?) -> String {
        guard let remote else { return "none" }
        var parts = [text(remote["mode"])]
        if let reported = remote["reported_mode"] as? String, reported != remote["mode"] as? String {
            parts.append("reported " + TerminalText.escaped(reported))
        }
        parts.append((remote["fresh"] as? Bool ?? false) ? "fresh" : "stale")
        if remote["latched"] as? Bool ?? false { parts.append("latched") }
        if let age = number(remote["age_s"]) { parts.append(String(format: "age %.1f s", age)) }
        if let message = remote["message"] as? String, !message.isEmpty {
            parts.append("\"" + TerminalText.escaped(message) + "\"")
        }
        return parts.joined(separator: ", ")
    }

    private static func line(_ label: String, _ value: String) -> String {
        label.padding(toLength: 10, withPad: " ", startingAt: 0) + value + "\n"
    }

    /// A JSON value as text: strings escaped, null as "-".
    private static func text(_ value: Any?) -> String {
        switch value {
        case nil, is NSNull: "-"
        case let string as String: TerminalText.escaped(string)
        case let number as NSNumber: number.stringValue
        case let other?: TerminalText.escaped("\(other)")
        }
    }

    private static func number(_ value: Any?) -> Double? {
        guard let number = value as? NSNumber else { return nil }
        return number.doubleValue
    }

    /// A number that is a whole one within ±1e15 (what a daemon sends), nil otherwise: the status
    /// may come from any socket, and `Int(_:)` of 1e300 or infinity traps.
    private static func integer(_ value: Any?) -> Int? {
        guard let number = number(value), number.isFinite, abs(number) < 1e15 else { return nil }
        return Int(number)
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
