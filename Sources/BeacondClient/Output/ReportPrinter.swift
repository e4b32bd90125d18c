import BLEPayload

/// Prints advertising reports in `beacond replay`'s format (aligned table rows, or JSON lines
/// with `--json`) and counts the GeoRacing signals and rejections among them. `replay` and
/// `scan` share it, so a live scan reads exactly like a replayed capture.
package struct ReportPrinter {
    let formatter: ReportFormatter
    /// Print every report, not only GeoRacing signals.
    let all: Bool
    let json: Bool
    package let output: OutputStream
    package private(set) var reports = 0
    private(set) var signals = 0
    private(set) var rejections: [GeoRacingRejection: Int] = [:]
    private(set) var userBeacons = 0
    private var headerPrinted = false

    package init(formatter: ReportFormatter, all: Bool, json: Bool, output: OutputStream) {
        self.formatter = formatter
        self.all = all
        self.json = json
        self.output = output
    }

    /// Prints `report` (with `adapter`, the adapter that heard it, when a scan has several).
    package mutating func print(_ report: AdvertisingReport, adapter: String? = nil) {
        reports += 1
        let match = formatter.decoder.decode(report.data)
        switch match {
        case .signal: signals += 1
        case .rejected(let reason): rejections[reason, default: 0] += 1
        case .userBeacon: userBeacons += 1
        case .none: if !all { return }
        }
        // Only GeoRacing signals without --all: rejected frames and attendees' phones are counted.
        if case .rejected = match, !all { return }
        if case .userBeacon = match, !all { return }
        if !json { printHeader() }
        // Straight into the output's buffer; written again with more room in the unlikely case
        // the bound falls short.
        var bound = ReportFormatter.lineBound(report)
        while true {
            var cursor = output.cursor(reserving: bound)
            if json {
                formatter.json(report, match: match, adapter: adapter, into: &cursor)
            } else {
                formatter.row(report, match: match, adapter: adapter, into: &cursor)
            }
            cursor.appendByte(UInt8(ascii: "\n"))
            if output.commit(cursor) { return }
            bound = max(bound, cursor.capacity) * 2
        }
    }

    /// The table's header line, once (tables only).
    package mutating func printHeader() {
        guard !json, !headerPrinted else { return }
        headerPrinted = true
        output.write(ReportFormatter.tableHeader + "\n")
    }

    /// "N GeoRacing signals, N user beacons, rejected: bad_length=0, ..." for the summaries on stderr.
    package var signalSummary: String {
        "\(signals) GeoRacing signals, \(userBeacons) user beacons, rejected:"
            + GeoRacingRejection.allCases.map { " \($0.reason)=\(rejections[$0, default: 0])" }.joined(separator: ",")
    }
}
