import ArgumentParser
import BLEPayload
import BeacondCore
import CircuitState

#if canImport(Glibc)
import Glibc
#endif

struct ReplayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Decode advertising reports from captures, or replay the track state they produce.",
        discussion: """
            Prints one line per GeoRacing signal (or, with --all, per advertising report), then a \
            summary on stderr. With --timeline, feeds the capture's signals (and a remote timeline) \
            through the fusion engine on capture time and prints each change of the published \
            (mode, source, zone), including expiries and staleness after the last record. Reads \
            btsnoop (1001, 1002, 2001), pcap and pcapng (link types 187, 201, \
            254, 256, 272). A capture that cannot be read further is reported with its file, record \
            and byte offset; what came before it is printed, the remaining captures are still read, \
            and the exit code is 1.
            """
    )

    @Flag(help: "Print every advertising report, not only GeoRacing signals.")
    var all = false

    @Flag(help: "Print one JSON object per line (see \(DocumentationPath.named("replay-json.md"))).")
    var json = false

    @Flag(help: "Print the published track state over time instead of reports (one capture).")
    var timeline = false

    @OptionGroup(title: "Decoding, and fusion with --timeline")
    var fusion: TimelineOptions

    var policy: Policy { fusion.policy }

    @Argument(help: ArgumentHelp("Capture files.", valueName: "capture"))
    var captures: [String]

    func validate() throws {
        if timeline && captures.count != 1 {
            throw ValidationError("--timeline replays exactly one capture")
        }
        if !timeline && fusion.remoteTimeline != nil {
            throw ValidationError("--remote-timeline needs --timeline")
        }
        if !timeline && fusion.verifies {
            throw ValidationError("--key-file, --unsigned and --clock-window verify what --timeline fuses")
        }
        if timeline && all {
            throw ValidationError("--all lists reports; --timeline lists states: choose one")
        }
    }

    func checkedSettings() throws -> DaemonConfiguration {
        try fusion.checkedSettings(command: "replay")
    }

    func run() throws {
        let settings = try checkedSettings()
        if timeline { return try runTimeline(settings) }
        let output = OutputStream(fd: STDOUT_FILENO)
        var session = ReplaySession(
            formatter: ReportFormatter(decoder: GeoRacingDecoder(companyID: settings.scanner.companyID)), all: all,
            json: json, output: output)
        let started = MonotonicClock.micros()
        var failed = false
        session.printer.printHeader()
        for path in captures {
            do throws(CaptureError) {
                try session.replay(path: path)
            } catch {
                output.flush()
                printError("beacond replay: error: \(error)")
                failed = true
            }
            if output.readerGone { break }
        }
        output.flush()
        session.printSummary(files: captures.count, elapsedMicros: MonotonicClock.micros() - started)
        if failed { throw ExitCode(1) }
    }
}

extension ReplayCommand {
    func runTimeline(_ settings: DaemonConfiguration) throws {
        let remote = try fusion.loadRemoteTimeline(command: "replay")
        let replay = try fusion.timelineReplay(
            settings, json: json, output: OutputStream(fd: STDOUT_FILENO), command: "replay")
        let started = MonotonicClock.micros()
        let summary: TimelineReplay.Summary
        do {
            summary = try replay.run(path: captures[0], remote: remote)
        } catch {
            printError("beacond replay: error: \(error)")
            throw ExitCode(1)
        }
        let counters = summary.counters
        let elapsed = Double(max(1, MonotonicClock.micros() - started)) / 1_000_000
        printError(
            "replay --timeline: \(summary.reports) reports, \(summary.signals) GeoRacing signals "
                + """
                (\(counters.accepted) accepted, \(counters.repeats) repeats, \(counters.olderIgnored) older \
                ignored, 
                """
                + "filtered: rssi=\(counters.filteredRSSI) zone=\(counters.filteredZone) "
                    + """
                    unknown_mode=\(counters.filteredUnknownMode); \(counters.evicted) evicted, \(counters.refused) \
                    refused), 
                    """
                + "\(summary.rejections) rejected frames, \(summary.userBeacons) user beacons, "
                + "\(counters.remoteSuccesses) remote fetches, "
                + "\(counters.remoteFailures) failed; \(summary.changes) state changes; "
                + Self.signedSummary(summary) + "; "
                + "\(Int(Double(summary.reports) / elapsed)) reports/s")
    }
}

extension ReplayCommand {
    /// `signed: 12 accepted, rejected: bad_tag=1 replayed=2, 1 unsigned below a signed claim`.
    static func signedSummary(_ summary: TimelineReplay.Summary) -> String {
        let signatures = summary.signatures
        let rejected = SignatureRejection.allCases.filter { signatures.rejected($0) > 0 }
            .map { "\($0.rawValue)=\(signatures.rejected($0))" }
        var text = "signed: \(signatures.accepted) accepted"
        if !rejected.isEmpty { text += ", rejected: " + rejected.joined(separator: " ") }
        if summary.counters.belowSigned > 0 {
            text += ", \(summary.counters.belowSigned) unsigned below a signed claim"
        }
        if summary.counters.filteredUnsigned > 0 { text += ", \(summary.counters.filteredUnsigned) unsigned rejected" }
        return text
    }
}

/// Counts and prints what `replay` decodes, across files.
struct ReplaySession {
    var printer: ReportPrinter
    var totals = ExtractorCounters()
    var hciTotals = HCIDecodeCounters()
    var problemsShown = 0
    static let maxProblemsShown = 20

    init(formatter: ReportFormatter, all: Bool, json: Bool, output: OutputStream) {
        printer = ReportPrinter(formatter: formatter, all: all, json: json, output: output)
    }

    mutating func replay(path: String) throws(CaptureError) {
        let reader = try CaptureReader(path: path)
        var extractor = AdvertisingExtractor()
        defer {
            accumulate(extractor)
        }
        while let packet = try reader.next() {
            let problem = extractor.process(packet) { report in printer.print(report) }
            if let problem { note(problem, in: path, packet: packet) }
            if printer.output.readerGone { return }
        }
    }

    private mutating func note(_ problem: RecordProblem, in path: String, packet: CapturePacket) {
        problemsShown += 1
        guard problemsShown <= Self.maxProblemsShown else { return }
        printer.output.flush()
        printError("beacond replay: warning: \(path): record \(packet.index) at byte \(packet.offset): \(problem)")
    }

    private mutating func accumulate(_ extractor: AdvertisingExtractor) {
        let counters = extractor.counters
        totals.records += counters.records
        totals.hciEvents += counters.hciEvents
        totals.otherRecords += counters.otherRecords
        totals.linkLayerPackets += counters.linkLayerPackets
        totals.linkLayerBadCRC += counters.linkLayerBadCRC
        totals.linkLayerSkipped += counters.linkLayerSkipped
        totals.malformedRecords += counters.malformedRecords
        totals.reports += counters.reports
        let hci = extractor.hci.counters
        hciTotals.skippedEvents += hci.skippedEvents
        hciTotals.malformedEvents += hci.malformedEvents
        hciTotals.truncatedReports += hci.truncatedReports
        hciTotals.reportsReassembled += hci.reportsReassembled
        hciTotals.fragmentChainsDropped += hci.fragmentChainsDropped
    }

    func printSummary(files: Int, elapsedMicros: Int64) {
        let seconds = Double(max(elapsedMicros, 1)) / 1_000_000
        let rate = Int(Double(totals.reports) / seconds)
        var text = "replay: \(files) capture\(files == 1 ? "" : "s"): \(totals.records) records, "
        text +=
            """
            \(totals.hciEvents) HCI events (\(hciTotals.skippedEvents) skipped, \(hciTotals.malformedEvents) \
            malformed), 
            """
        if totals.linkLayerPackets > 0 {
            text += "\(totals.linkLayerPackets) link-layer packets (\(totals.linkLayerBadCRC) bad CRC), "
        }
        text += "\(totals.reports) reports"
        if hciTotals.truncatedReports > 0 { text += " (\(hciTotals.truncatedReports) truncated)" }
        text += ", " + printer.signalSummary
        if problemsShown > Self.maxProblemsShown {
            text += "; \(problemsShown - Self.maxProblemsShown) more record warnings not shown"
        }
        text += "; \(String(format3(seconds))) s, \(rate) reports/s"
        printError(text)
    }

    private func format3(_ value: Double) -> String {
        let millis = Int((value * 1000).rounded())
        let fraction = String(millis % 1000)
        return "\(millis / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
    }
}
