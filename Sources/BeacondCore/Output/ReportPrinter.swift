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
    private(set) var reports = 0
    private(set) var signals = 0
    private(set) var rejections: [GeoRacingRejection: Int] = [:]
    private var writer = JSONWriter(capacity: 4096)
    private var headerPrinted = false

    package init(formatter: ReportFormatter, all: Bool, json: Bool, output: OutputStream) {
        self.formatter = formatter
        self.all = all
        self.json = json
        self.output = output
    }

    package mutating func print(_ report: AdvertisingReport) {
        reports += 1
        let match = formatter.decoder.decode(report.data)
        switch match {
        case .signal: signals += 1
        case .rejected(let reason): rejections[reason, default: 0] += 1
        case .none: if !all { return }
        }
        if case .rejected = match, !all { return }
        if json {
            formatter.json(report, match: match, into: &writer)
            writer.newline()
            output.write(writer.bytes)
            writer.bytes.removeAll(keepingCapacity: true)
        } else {
            printHeader()
            output.write(formatter.row(report, match: match) + "\n")
        }
    }

    /// The table's header line, once (tables only).
    package mutating func printHeader() {
        guard !json, !headerPrinted else { return }
        headerPrinted = true
        output.write(ReportFormatter.tableHeader + "\n")
    }

    /// "N GeoRacing signals, rejected: bad_length=0, ..." for the summaries on stderr.
    package var signalSummary: String {
        "\(signals) GeoRacing signals, rejected:"
            + GeoRacingRejection.allCases.map { " \($0.reason)=\(rejections[$0, default: 0])" }.joined(separator: ",")
    }
}
