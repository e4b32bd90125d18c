import ArgumentParser
import BeacondClient
import BeacondCore
import Foundation

struct ReportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Write a race as one HTML page: what each zone claimed, what the screens showed, race control.",
        discussion: """
            Replays the capture as `replay --timeline` does (the same fusion flags) and writes one \
            self-contained page that opens offline in any browser: a timeline with a row per zone, \
            the published state and race control, to zoom and pan; every stretch's details (beacon, \
            sequence, TTL, RSSI, why it ended) on hover and in a table; a summary of how long each \
            mode was shown, changes, contests, forged and rejected frames and scanner gaps. \
            See \(DocumentationPath.named("report.md")).
            """
    )

    @OptionGroup(title: "Fusion")
    var fusion: TimelineOptions

    @Option(
        name: .customLong("tz"),
        help: ArgumentHelp(
            "Time zone the page shows wall time in, an IANA name such as Europe/Madrid (default: this machine's).",
            valueName: "zone"))
    var timeZone: String?

    @Option(
        name: [.short, .customLong("output")],
        help: ArgumentHelp("The page to write (default: the capture's name with .html).", valueName: "file"))
    var output: String?

    @Argument(help: ArgumentHelp("The capture to report on.", valueName: "capture"))
    var capture: String

    func validate() throws {
        if let timeZone, TimeZone(identifier: timeZone) == nil {
            throw ValidationError("--tz \(timeZone): not a time zone this machine knows (an IANA name: Europe/Madrid)")
        }
    }

    /// Where the page goes: `--output`, or the capture's file name with `.html` in the current directory.
    var outputPath: String {
        if let output { return output }
        var name = URL(fileURLWithPath: capture).deletingPathExtension().lastPathComponent
        if name.isEmpty { name = "report" }
        return name + ".html"
    }

    func run() throws {
        let settings = try fusion.checkedSettings(command: "report")
        let remote = try fusion.loadRemoteTimeline(command: "report")
        let replay = try fusion.timelineReplay(
            settings, json: false, output: OutputStream(fd: STDERR_FILENO), command: "report")
        let zone = timeZone ?? TimeZone.current.identifier
        let report: RaceReport
        do {
            report = try RaceReport.fromCapture(
                path: capture, remote: remote, replay: replay,
                title: URL(fileURLWithPath: capture).lastPathComponent, timeZone: zone)
        } catch {
            printError("beacond report: error: \(error)")
            throw ExitCode(1)
        }
        let page = RaceReportPage.html(report)
        do {
            try FileOutput.write(page, to: outputPath)
        } catch {
            printError("beacond report: error: \(error)")
            throw ExitCode(1)
        }
        printError(
            "report: \(outputPath): \(report.stretches.count) stretches in \(report.stretches.map(\.row).uniqueCount) "
                + "rows, \(report.counts.changes) changes, \(report.gaps.count) scanner gaps, \(page.count) bytes")
    }
}

extension Array where Element: Hashable {
    fileprivate var uniqueCount: Int { Set(self).count }
}
