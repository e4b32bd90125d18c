import BLEPayload
import BeacondTestSupport
import Foundation
import Testing

/// `beacond report` in a real browser: the real binary writes the page, Debian's Chromium opens it
/// headless (its script draws the chart and the table), and every stretch the page lists is
/// checked against `replay --timeline --json` (the published row) and against what the scenario's
/// frames mean (the zone and race control rows, worked out by hand from the scenario). The page
/// must log nothing to the console: its Content-Security-Policy forbids every fetch, and a copy of
/// the page with an image from the network shows that the browser reports the refusal there.
///
/// With BEACOND_REPORT_SCREENSHOT=FILE the race-weekend screenshot is also copied to FILE (how
/// docs/images/report-race-weekend.png is made: docs/report.md).
@Suite(.serialized, .chromiumInstalled, .python3Installed("it decodes the screenshots"))
struct ReportBrowserTests {
    /// 2026-05-16T12:00:00Z, the example's start.
    static let base: Int64 = 1_778_932_800_000_000

    struct Element: Hashable {
        var row: String
        var mode: String
        var start: Int64
        var end: Int64
        var attributes: [String: String]

        static func == (lhs: Element, rhs: Element) -> Bool {
            (lhs.row, lhs.mode, lhs.start, lhs.end) == (rhs.row, rhs.mode, rhs.start, rhs.end)
        }
        func hash(into hasher: inout Hasher) { hasher.combine(row + mode + "\(start) \(end)") }
    }

    /// Writes the report, opens it, and returns the DOM and the browser's log.
    static func open(
        _ capture: String, _ flags: [String], name: String
    ) throws -> (dom: String, log: String, page: String) {
        let page = BeacondProcess.temporaryFile("\(name).html")
        let written = try BeacondProcess.run(["report", capture, "-o", page] + flags)
        #expect(written.status == 0, "\(written.stderr)")
        let bytes = (try? Data(contentsOf: URL(fileURLWithPath: page)).count) ?? 0
        #expect(bytes > 0 && bytes < 200_000, "\(bytes) bytes")
        let shown = try WebKioskBrowserTests.browser(
            ["--enable-logging=stderr", "--v=0", "--dump-dom", "file://" + page])
        #expect(shown.stdout.contains("data-ready=\"1\""), "the script did not finish: \(shown.stderr.suffix(800))")
        return (shown.stdout, shown.stderr, page)
    }

    /// Every `<tag …>` in the DOM that has a `data-row`, with its attributes.
    static func elements(_ tag: String, in dom: String) -> [Element] {
        let tags = try! NSRegularExpression(pattern: "<\(tag) ([^>]*data-row=[^>]*)>")
        let attribute = try! NSRegularExpression(pattern: "([a-z-]+)=\"([^\"]*)\"")
        let text = dom as NSString
        return tags.matches(in: dom, range: NSRange(location: 0, length: text.length)).compactMap { match in
            let inside = text.substring(with: match.range(at: 1))
            var values: [String: String] = [:]
            for found in attribute.matches(in: inside, range: NSRange(location: 0, length: (inside as NSString).length))
            {
                let string = inside as NSString
                values[string.substring(with: found.range(at: 1))] = string.substring(with: found.range(at: 2))
            }
            guard let row = values["data-row"], let mode = values["data-mode"],
                let start = values["data-start"].flatMap({ Int64($0) }),
                let end = values["data-end"].flatMap({ Int64($0) })
            else { return nil }
            return Element(row: row, mode: mode, start: start, end: end, attributes: values)
        }
    }

    /// `replay --timeline --json`'s lines as (Unix µs, mode), read exactly from the six decimals.
    static func timeline(_ capture: String, _ flags: [String]) throws -> [(Int64, String)] {
        let replay = try BeacondProcess.run(["replay", "--timeline", "--json", capture] + flags)
        #expect(replay.status == 0, "\(replay.stderr)")
        let ts = try NSRegularExpression(pattern: "\"ts\":(-?[0-9]+)\\.([0-9]{6})")
        return try replay.jsonLines().enumerated().map { index, object in
            let line = replay.lines[index] as NSString
            let match = try #require(
                ts.firstMatch(in: line as String, range: NSRange(location: 0, length: line.length)))
            let micros =
                Int64(line.substring(with: match.range(at: 1)))! * 1_000_000
                + Int64(line.substring(with: match.range(at: 2)))!
            return (micros, object["mode"] as? String ?? "")
        }
    }

    /// The published row is `replay --timeline`: one stretch per line, from it to the next.
    static func checkPublished(_ rows: [Element], against lines: [(Int64, String)]) {
        let published = rows.filter { $0.row == "published" }
        #expect(published.map(\.start) == lines.map(\.0))
        #expect(published.map(\.mode) == lines.map(\.1))
        #expect(Array(published.map(\.end).dropLast()) == Array(lines.map(\.0).dropFirst()))
        if let last = published.last { #expect(last.end >= last.start) }
    }

    static func stretches(_ rows: [Element], _ row: String) -> [(String, Int64, Int64)] {
        rows.filter { $0.row == row }.map { ($0.mode, $0.start - base, $0.end - base) }
    }

    static func same(_ found: [(String, Int64, Int64)], _ expected: [(String, Int64, Int64)]) -> Bool {
        found.count == expected.count && zip(found, expected).allSatisfy { $0 == $1 }
    }

    @Test func theRaceWeekendPageListsWhatTheTimelineSays() throws {
        let directory = try TemporaryDirectory.make(prefix: "report")
        let capture = directory + "/race-weekend.btsnoop"
        #expect(try BeacondProcess.run(["example-capture", capture]).status == 0)
        let flags = ["--remote-timeline", RepositoryPaths.root.path + "/examples/race-control-timeline.jsonl"]
        let (dom, log, page) = try Self.open(capture, flags + ["--tz", "Europe/Madrid"], name: "race-weekend")
        #expect(!log.contains("CONSOLE"), "the page logged: \(log)")
        #expect(dom.contains("default-src 'none'"))
        let rows = Self.elements("tr", in: dom)
        Self.checkPublished(rows, against: try Self.timeline(capture, flags))

        // The example's frames (ExampleCapture.raceWeekend): zone N's beacon reports at N × 0.25 s
        // past each second with TTL 10 s; a lowered flag is held 1 s; the staff device's red flag
        // (zone 3, TTL 30 s, 92–139 s) outlasts zone 3's own beacon going green at 150 s.
        let at = { (seconds: Double) in Int64((seconds * 1_000_000).rounded()) + 1_234 }
        #expect(
            Self.same(
                Self.stretches(rows, "zone 1"),
                [("normal", at(0), at(170)), ("evacuation", at(170), at(209))]))
        #expect(
            Self.same(
                Self.stretches(rows, "zone 2"),
                [
                    ("normal", at(0.25), at(20.25)), ("safety_car", at(20.25), at(81.25)),
                    ("normal", at(81.25), at(249.25)),
                ]))
        #expect(
            Self.same(
                Self.stretches(rows, "zone 3"),
                [("normal", at(0.5), at(90.5)), ("red_flag", at(90.5), at(169.75)), ("normal", at(169.75), at(249.5))]))
        let zoneEnds = rows.filter { $0.row.hasPrefix("zone") }.map { $0.attributes["data-ended"] ?? "" }
        #expect(
            zoneEnds == [
                "replaced", "expired", "replaced", "deescalated", "expired", "replaced", "expired",
                "expired",
            ])

        // Race control fetched every 5 s at .4 s, failed from 110 to 130 s; stale 15 s after a fetch.
        let control = rows.filter { $0.row == "race_control" }
        let fetch = { (seconds: Int64) in Self.base + seconds * 1_000_000 + 400_000 }
        #expect(
            control.map(\.mode) == [
                "normal", "safety_car", "normal", "red_flag", "red_flag", "red_flag",
                "normal", "evacuation", "normal", "normal",
            ])
        #expect(control.map(\.start) == [0, 25, 85, 95, 120, 135, 155, 175, 205, 255].map(fetch))
        #expect(
            control.map { $0.attributes["data-stale"] == "true" } == [
                false, false, false, false, true, false,
                false, false, false, true,
            ])

        // Every stretch drawn at this zoom is one the table lists.
        let drawn = Self.elements("rect", in: dom)
        #expect(drawn.count >= rows.filter { $0.end > $0.start }.count - 2)
        #expect(Set(drawn).isSubset(of: Set(rows)))
        #expect(
            dom.contains("id=\"counts\" data-changes=\"9\" data-contests=\"0\" data-forged=\"0\" data-rejected=\"1\""))

        let shot = directory + "/race-weekend.png"
        let taken = try WebKioskBrowserTests.browser(
            ["--hide-scrollbars", "--window-size=1200,620", "--screenshot=\(shot)", "file://" + page])
        #expect(FileManager.default.fileExists(atPath: shot), "no screenshot: \(taken.stderr.suffix(400))")
        let colours = try WebKioskBrowserTests.run(
            "/usr/bin/python3", [RepositoryPaths.fixture("png_colours.py"), shot, "#d20000", "#009639", "#ff8200"])
        let shares = colours.stdout.split(separator: "\n").dropFirst().compactMap { line in
            line.split(separator: " ").last.flatMap { Double($0) }
        }
        #expect(shares.count == 3 && shares.allSatisfy { $0 > 0.01 }, "red, green, amber: \(colours.stdout)")
        if let copy = ProcessInfo.processInfo.environment["BEACOND_REPORT_SCREENSHOT"] {
            try? FileManager.default.removeItem(atPath: copy)
            try FileManager.default.copyItem(atPath: shot, toPath: copy)
        }
    }

    @Test func aContestAGapAndALapseAreOnThePage() throws {
        let start = Self.base
        let s = { (seconds: Int64) in start + seconds * 1_000_000 }
        var records: [(Int64, [UInt8])] = []
        for second in 0..<15 {
            records.append(
                (s(Int64(second)), CaptureTimeExtremesTests.h4(zone: 4, mode: .normal, sequence: 10, ttl: 10)))
        }
        // An older sequence asserting a red flag from the same address: a contest.
        records.append((s(10) + 500_000, CaptureTimeExtremesTests.h4(zone: 4, mode: .redFlag, sequence: 9, ttl: 10)))
        // Nothing for 26 s: a scanner gap. Then zone 5's safety car, TTL 5 s.
        for second in 40..<45 {
            records.append(
                (s(Int64(second)), CaptureTimeExtremesTests.h4(zone: 5, mode: .safetyCar, sequence: 1, ttl: 5)))
        }
        records.sort { $0.0 < $1.0 }
        let capture = CaptureTimeExtremesTests.btsnoop("report-contest.btsnoop", records)
        let (dom, log, _) = try Self.open(capture, ["--tz", "UTC"], name: "contest")
        #expect(!log.contains("CONSOLE"), "the page logged: \(log)")
        let rows = Self.elements("tr", in: dom)
        Self.checkPublished(rows, against: try Self.timeline(capture, []))
        let m = { (seconds: Double) in Int64((seconds * 1_000_000).rounded()) }
        #expect(
            Self.same(
                Self.stretches(rows, "zone 4"),
                [("normal", 0, m(10.5)), ("red_flag", m(10.5), m(20.5)), ("normal", m(20.5), m(24))]))
        #expect(
            rows.filter { $0.row == "zone 4" }.map { $0.attributes["data-ended"] ?? "" } == [
                "contested", "expired", "expired",
            ])
        #expect(rows.first { $0.row == "zone 4" && $0.mode == "red_flag" }?.attributes["data-contested"] == "true")
        #expect(Self.same(Self.stretches(rows, "zone 5"), [("safety_car", m(40), m(49))]))
        #expect(rows.filter { $0.row == "race_control" }.isEmpty)
        #expect(dom.contains("data-contests=\"1\"") && dom.contains("data-gaps=\"1\""))
        #expect(dom.contains("class=\"gap\""), "the gap is drawn")
    }

    /// The console check can fail: the same page with an image from the network logs the refusal.
    @Test func aFetchTheCSPRefusesIsLogged() throws {
        let directory = try TemporaryDirectory.make(prefix: "report-csp")
        let capture = directory + "/race-weekend.btsnoop"
        #expect(try BeacondProcess.run(["example-capture", capture]).status == 0)
        let page = directory + "/race.html"
        #expect(try BeacondProcess.run(["report", capture, "-o", page]).status == 0)
        let html = try String(contentsOfFile: page, encoding: .utf8)
        let tampered = directory + "/tampered.html"
        try html.replacingOccurrences(of: "<body>", with: "<body><img src=\"http://192.0.2.1/x.png\">")
            .write(toFile: tampered, atomically: true, encoding: .utf8)
        let shown = try WebKioskBrowserTests.browser(
            ["--enable-logging=stderr", "--v=0", "--dump-dom", "file://" + tampered])
        #expect(shown.stderr.contains("CONSOLE") && shown.stderr.contains("img-src 'none'"), "\(shown.stderr)")
    }
}
