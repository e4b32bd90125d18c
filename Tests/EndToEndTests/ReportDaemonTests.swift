import BeacondTestSupport
import Foundation
import Testing

/// `beacond report --socket`: a running daemon's history (`history` requests, page by page) makes
/// the same page as the capture it heard. The daemon replays the bundled example at maximum speed,
/// so its engine runs on the capture's time and decides as `replay --timeline` does; every stretch
/// of the two pages (opened in headless Chromium) must agree.
@Suite(.serialized, .chromiumInstalled)
struct ReportDaemonTests {
    @Test func aDaemonsHistoryIsTheRaceOfTheCaptureItHeard() throws {
        let directory = try TemporaryDirectory.make(prefix: "report-daemon")
        let capture = directory + "/race-weekend.btsnoop"
        #expect(try BeacondProcess.run(["example-capture", capture]).status == 0)
        let daemon = try DaemonProcess(["--backend", "replay", "--replay", capture, "--speed", "max"])
        defer { _ = daemon.stop() }
        // The replay is over when the scanner says so: everything after it is expiries, evaluated then.
        let finished = blockingWaitUntil(within: 20, intervalMicros: 100_000) {
            let status = try? BeacondProcess.run(["status", "--json", "--socket", daemon.socket])
            return status?.stdout.contains(#""scanner":{"backend":"replay","state":"none""#) == true
        }
        #expect(finished, "the replay never finished: \(daemon.logText.suffix(600))")

        let (fromCapture, captureLog, _) = try ReportBrowserTests.open(capture, ["--tz", "UTC"], name: "captured")
        let live = directory + "/live.html"
        let written = try BeacondProcess.run(["report", "--socket", daemon.socket, "--since", "2h", "-o", live])
        #expect(written.status == 0, "\(written.stderr)")
        #expect(written.stderr.contains("stretches in 5 rows, 9 changes"), "\(written.stderr)")
        let shown = try WebKioskBrowserTests.browser(
            ["--enable-logging=stderr", "--v=0", "--dump-dom", "file://" + live])
        #expect(!shown.stderr.contains("CONSOLE") && !captureLog.contains("CONSOLE"), "\(shown.stderr)")
        let liveRows = ReportBrowserTests.elements("tr", in: shown.stdout)
        let captureRows = ReportBrowserTests.elements("tr", in: fromCapture)
        #expect(liveRows.count == captureRows.count && liveRows.count > 10)
        #expect(liveRows == captureRows, "live \(liveRows.map(\.mode)) capture \(captureRows.map(\.mode))")
        #expect(
            liveRows.map { $0.attributes["data-ended"] ?? "" } == captureRows.map { $0.attributes["data-ended"] ?? "" })
        #expect(shown.stdout.contains("since the daemon started"))
    }

    @Test func aReportNeedsACaptureOrADaemonThatAnswers() throws {
        let missing = try BeacondProcess.run(["report", "--socket", "/nonexistent/beacond.sock", "-o", "/dev/null"])
        #expect(missing.status == 1 && missing.stderr.contains("beacond report: error:"), "\(missing.stderr)")
        let both = try BeacondProcess.run(["report", "--socket", "/tmp/x.sock", "capture.btsnoop"])
        #expect(both.status == 64 && both.stderr.contains("a capture or --socket, not both"), "\(both.stderr)")
        let neither = try BeacondProcess.run(["report"])
        #expect(neither.status == 64, "\(neither.stderr)")
        let since = try BeacondProcess.run(["report", "--socket", "/tmp/x.sock", "--since", "31d"])
        #expect(since.status == 64 && since.stderr.contains("--since 31d"), "\(since.stderr)")
        let badZone = try BeacondProcess.run(["report", "capture.btsnoop", "--tz", "Mars/Olympus"])
        #expect(badZone.status == 64 && badZone.stderr.contains("--tz Mars/Olympus"), "\(badZone.stderr)")
    }
}
