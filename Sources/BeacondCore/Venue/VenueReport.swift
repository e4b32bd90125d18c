/// `beacond venue`'s outputs for a set of rows: the table and the `--json` snapshot.
package enum VenueReport {
    /// One line per node; `!` marks an alarm (offline, or race control lagging by more than 5 s).
    package static func table(_ rows: [VenueTable.Row], color: Bool) -> String {
        var lines = [
            pad("", 1) + pad("NODE", 20) + pad("MODE", 12) + pad("SOURCE", 8) + pad("ZONE", 18) + pad("AGE", 8)
                + pad("ONLINE", 8) + "RACE CONTROL"
        ]
        for row in rows {
            let zone = row.zone.map { zone in row.zoneName.map { "\(zone) \($0)" } ?? String(zone) } ?? "-"
            let age = row.age.map { seconds in seconds < 100 ? "\(Int(seconds))s" : "\(Int(seconds / 60))m" } ?? "-"
            let online = row.online.map { $0 ? "yes" : "NO" } ?? "?"
            var race = row.raceControlMode ?? "-"
            if let updated = row.raceControlUpdated { race += " @ \(updated)" }
            if row.lagging, let lag = row.raceControlLag { race += " LAGGING \(Int(lag))s" }
            if let problem = row.problem { race += " (\(problem))" }
            var line =
                pad(row.alarm ? "!" : " ", 1) + pad(row.node, 20) + pad(row.mode ?? "-", 12) + pad(row.source ?? "-", 8)
                + pad(zone, 18) + pad(age, 8) + pad(online, 8) + race
            line = TerminalText.escaped(line)
            if color, row.alarm { line = "\u{1B}[1;31m" + line + "\u{1B}[0m" }
            lines.append(line)
        }
        let alarms = rows.filter(\.alarm).count
        lines.append("\(rows.count) node\(rows.count == 1 ? "" : "s"), \(alarms) alarm\(alarms == 1 ? "" : "s")")
        return lines.joined(separator: "\n") + "\n"
    }

    private static func pad(_ text: String, _ width: Int) -> String {
        let cut = text.count > width - 1 && width > 1 ? String(text.prefix(width - 2)) + "…" : text
        return cut + String(repeating: " ", count: max(1, width - cut.count))
    }

    /// `{"nodes":[…],"alarms":N}` on one line.
    package static func json(_ rows: [VenueTable.Row]) -> [UInt8] {
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
            writer.key("alarm"); writer.bool(row.alarm)
            if let problem = row.problem { writer.key("problem"); writer.string(problem) }
            writer.endObject()
        }
        writer.endArray()
        writer.key("alarms"); writer.int(rows.filter(\.alarm).count)
        writer.endObject()
        writer.newline()
        return writer.bytes
    }
}
