/// `beacond venue`'s outputs for a set of rows: the table and the `--json` snapshot. Every text in a
/// row came from the broker: the table escapes it, the JSON writer quotes it, and `VenueTable` cut it.
package enum VenueReport {
    /// One line per node, evacuations first, then alarms, each by name; `!` marks an alarm. The
    /// footer counts the nodes, the alarms, and the nodes the full table left out.
    package static func table(_ rows: [VenueTable.Row], color: Bool, leftOut: Int = 0) -> String {
        var lines = [
            pad("", 1) + pad("NODE", 20) + pad("MODE", 12) + pad("SOURCE", 8) + pad("ZONE", 18) + pad("AGE", 8)
                + pad("ONLINE", 8) + "RACE CONTROL"
        ]
        let ordered = rows.enumerated().sorted { left, right in
            let (a, b) = (left.element, right.element)
            if a.evacuation != b.evacuation { return a.evacuation }
            if a.alarm != b.alarm { return a.alarm }
            return left.offset < right.offset
        }
        for row in ordered.map(\.element) {
            let zone = row.zone.map { zone in row.zoneName.map { "\(zone) \($0)" } ?? String(zone) } ?? "-"
            let online = row.online.map { $0 ? "yes" : "NO" } ?? "?"
            var race = row.raceControlMode ?? "-"
            if let updated = row.raceControlUpdated { race += " @ \(updated)" }
            if row.lagging, let lag = row.raceControlLag { race += " LAGGING \(duration(lag))" }
            if row.stale { race += " STALE" + (row.sentAge.map { " (sent \(duration($0)) ago)" } ?? " (no sent time)") }
            if let problem = row.problem { race += " (\(problem))" }
            var line =
                pad(row.alarm ? "!" : " ", 1) + pad(row.node, 20) + pad(row.mode ?? "-", 12) + pad(row.source ?? "-", 8)
                + pad(zone, 18) + pad(row.age.map(duration) ?? "-", 8) + pad(online, 8) + race
            line = TerminalText.escaped(line)
            if color, row.alarm { line = "\u{1B}[1;31m" + line + "\u{1B}[0m" }
            lines.append(line)
        }
        let alarms = rows.filter(\.alarm).count
        var footer = "\(rows.count) node\(rows.count == 1 ? "" : "s"), \(alarms) alarm\(alarms == 1 ? "" : "s")"
        if leftOut > 0 { footer += ", \(leftOut) more left out (the table holds \(VenueTable.maxNodes))" }
        lines.append(footer)
        return lines.joined(separator: "\n") + "\n"
    }

    /// `12s`, `7m`, `5h`, `3d`: whole units of a non-negative, finite number of seconds.
    static func duration(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds >= 0 else { return "?" }
        if seconds < 100 { return "\(Int(seconds))s" }
        if seconds < 6000 { return "\(Int(seconds / 60))m" }
        if seconds < 172_800 { return "\(Int(seconds / 3600))h" }
        return seconds < 1e15 ? "\(Int(seconds / 86400))d" : ">1e10d"
    }

    private static func pad(_ text: String, _ width: Int) -> String {
        let cut = text.count > width - 1 && width > 1 ? String(text.prefix(width - 2)) + "…" : text
        return cut + String(repeating: " ", count: max(1, width - cut.count))
    }

    /// `{"nodes":[…],"alarms":N,"left_out":N}` on one line.
    package static func json(_ rows: [VenueTable.Row], leftOut: Int = 0) -> [UInt8] {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("nodes")
        writer.beginArray()
        for row in rows {
            writer.beginObject()
            writer.key("node"); writer.string(row.node)
            writer.key("mode"); writer.string(orNull: row.mode)
            writer.key("source"); writer.string(orNull: row.source)
            writer.key("zone"); writer.int(row.zone)
            writer.key("zone_name"); writer.string(orNull: row.zoneName)
            writer.key("age_s"); writer.number(orNull: row.age, decimals: 3)
            writer.key("sent_age_s"); writer.number(orNull: row.sentAge, decimals: 3)
            writer.key("online")
            if let online = row.online { writer.bool(online) } else { writer.null() }
            writer.key("race_control")
            writer.beginObject()
            writer.key("mode"); writer.string(orNull: row.raceControlMode)
            writer.key("last_updated"); writer.string(orNull: row.raceControlUpdated)
            writer.key("lag_s"); writer.number(orNull: row.raceControlLag, decimals: 3)
            writer.endObject()
            writer.key("lagging"); writer.bool(row.lagging)
            writer.key("offline"); writer.bool(row.offline)
            writer.key("stale"); writer.bool(row.stale)
            writer.key("evacuation"); writer.bool(row.evacuation)
            writer.key("refused_messages"); writer.int(row.refusedMessages)
            writer.key("alarm"); writer.bool(row.alarm)
            if let problem = row.problem { writer.key("problem"); writer.string(problem) }
            writer.endObject()
        }
        writer.endArray()
        writer.key("alarms"); writer.int(rows.filter(\.alarm).count)
        writer.key("left_out"); writer.int(leftOut)
        writer.endObject()
        writer.newline()
        return writer.bytes
    }
}
