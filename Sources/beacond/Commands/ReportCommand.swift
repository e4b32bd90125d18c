import ArgumentParser
import BeacondClient
import BeacondCore
import Foundation

struct ReportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Write a race as one HTML page: what each zone claimed, what the screens showed, race control.",
        discussion: """
            From a capture: replays it as `replay --timeline` does (the same fusion flags). From a \
            running daemon (--socket, --since): asks it for its recent history, what it decided with \
            its own configuration. Writes one self-contained page that opens offline in any browser: \
            a timeline with a row per zone, the published state and race control, to zoom and pan; \
            every stretch's details (beacon, sequence, TTL, RSSI, why it ended) on hover and in a \
            table; a summary of how long each mode was shown, changes, contests, forged and rejected \
            frames and scanner gaps. See \(DocumentationPath.named("report.md")).
            """
    )

    @OptionGroup(title: "Fusion (a capture)")
    var fusion: TimelineOptions

    @Option(
        help: ArgumentHelp(
            "Report on the daemon listening here instead of a capture (its history).", valueName: "path"))
    var socket: String?

    @Option(
        help: ArgumentHelp(
            "With --socket: how far back, such as 90m, 2h or 1d (default: all the daemon kept).",
            valueName: "duration"),
        transform: ReportCommand.parseSince)
    var since: Int64?

    @Option(
        name: .customLong("tz"),
        help: ArgumentHelp(
            "Time zone the page shows wall time in, an IANA name such as Europe/Madrid (default: this machine's).",
            valueName: "zone"))
    var timeZone: String?

    @Option(
        name: [.short, .customLong("output")],
        help: ArgumentHelp(
            "The page to write (default: the capture's name with .html; beacond.html with --socket).",
            valueName: "file"))
    var output: String?

    @Argument(help: ArgumentHelp("The capture to report on.", valueName: "capture"))
    var capture: String?

    func validate() throws {
        if let timeZone, TimeZone(identifier: timeZone) == nil {
            throw ValidationError("--tz \(timeZone): not a time zone this machine knows (an IANA name: Europe/Madrid)")
        }
        switch (capture, socket) {
        case (nil, nil): throw ValidationError("give a capture, or --socket for a running daemon")
        case (.some, .some): throw ValidationError("a capture or --socket, not both")
        case (.some, nil) where since != nil: throw ValidationError("--since needs --socket")
        case (nil, .some) where fusion.remoteTimeline != nil || fusion.verifies:
            throw ValidationError(
                "--remote-timeline, --key-file, --unsigned and --clock-window replay a capture; "
                    + "a daemon reports what it decided")
        default: break
        }
    }

    /// `90m`, `2h`, `1.5d`, `45s` or plain seconds (the duration parser of the config file and
    /// flags, with a unit), rounded up to whole seconds: from 1 s to 30 days.
    static func parseSince(_ text: String) throws -> Int64 {
        let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        var number = text
        var unit: Int64 = 1
        if let last = text.last, let factor = units[last] {
            unit = factor
            number.removeLast()
        }
        let limit = HistoryQuery.maxSinceSeconds * 1_000_000
        guard let value = SecondsArgument.parse(number), value <= limit / unit,
            (1_000_000...limit).contains(value * unit)
        else {
            throw ValidationError(
                "--since \(text): a duration such as 90m, 2h or 1d, from 1 s to "
                    + "\(HistoryQuery.maxSinceSeconds / 86_400) days")
        }
        return (value * unit + 999_999) / 1_000_000
    }

    /// Where the page goes: `--output`, or the capture's file name with `.html` in the current directory.
    var outputPath: String {
        if let output { return output }
        guard let capture else { return "beacond.html" }
        var name = URL(fileURLWithPath: capture).deletingPathExtension().lastPathComponent
        if name.isEmpty { name = "report" }
        return name + ".html"
    }

    func run() throws {
        let zone = timeZone ?? TimeZone.current.identifier
        let report: RaceReport
        if let socket {
            report = try DaemonHistory.report(socket: socket, since: since, timeZone: zone)
        } else {
            report = try captureReport(capture ?? "", timeZone: zone)
        }
        let page = RaceReportPage.html(report)
        do {
            try FileOutput.write(page, to: outputPath)
        } catch {
            printError("beacond report: error: \(error)")
            throw ExitCode(1)
        }
        // The page always draws the screens' and race control's rows, with or without stretches.
        let rows = Set(report.stretches.map(\.row)).union([.published, .raceControl]).count
        let gaps = report.gaps.count == 1 ? "1 scanner gap" : "\(report.gaps.count) scanner gaps"
        printError(
            "report: \(outputPath): \(report.stretches.count) stretches in \(rows) rows, "
                + "\(report.counts.changes) changes, \(gaps), \(page.count) bytes")
    }

    private func captureReport(_ capture: String, timeZone: String) throws -> RaceReport {
        let settings = try fusion.checkedSettings(command: "report")
        let remote = try fusion.loadRemoteTimeline(command: "report")
        let replay = try fusion.timelineReplay(
            settings, json: false, output: OutputStream(fd: STDERR_FILENO), command: "report")
        do {
            return try RaceReport.fromCapture(
                path: capture, remote: remote, replay: replay,
                title: URL(fileURLWithPath: capture).lastPathComponent, timeZone: timeZone)
        } catch {
            printError("beacond report: error: \(error)")
            throw ExitCode(1)
        }
    }
}
