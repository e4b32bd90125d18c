import BeacondClient
import CircuitState
import Crypto
import Foundation

/// `beacond report`'s page: one self-contained HTML file. The summary is written here; the chart
/// and the table are drawn by the page's script from the data block (docs/report.md).
package enum RaceReportPage {
    package static func html(_ report: RaceReport) -> [UInt8] {
        var page = ""
        page.reserveCapacity(64 * 1024)
        page += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
        page += "<meta http-equiv=\"Content-Security-Policy\" content=\"\(contentSecurityPolicy)\">\n"
        page += "<meta name=\"viewport\" content=\"width=device-width\">\n"
        page += "<meta name=\"generator\" content=\"beacond \(HTMLText.escaped(BeacondVersion.current))\">\n"
        page += "<title>Race report: \(HTMLText.escaped(report.title))</title>\n"
        page += "<style>\(RaceReportAssets.style)</style></head>\n<body>\n"
        page += "<header><h1>Race report: \(HTMLText.escaped(report.title))</h1>\n"
        page += "<p id=\"range\" class=\"muted\">\(TimeFormat.iso8601(micros: report.start)) to "
        page += "\(TimeFormat.iso8601(micros: report.end))</p></header>\n"
        page += summary(report)
        page += chart
        page += table
        page += "<script type=\"application/json\" id=\"race-data\">"
        var bytes = Array(page.utf8)
        bytes += RaceReportData.json(report)
        bytes += Array("</script>\n<script>\(RaceReportAssets.script)</script>\n".utf8)
        bytes += Array(noScript.utf8)
        return bytes
    }

    /// Only the page's own style and script run, and nothing may be fetched: no image, font, frame
    /// or connection. A `<meta>` policy cannot say `frame-ancestors`; a file has no server to.
    static let contentSecurityPolicy =
        "default-src 'none'; script-src '\(hash(RaceReportAssets.script))'; "
        + "style-src '\(hash(RaceReportAssets.style))'; img-src 'none'; connect-src 'none'; "
        + "base-uri 'none'; form-action 'none'"

    /// `sha256-…`: base64 of the SHA-256 of the UTF-8 bytes, as CSP compares them.
    static func hash(_ text: String) -> String {
        "sha256-" + Data(SHA256.hash(data: Array(text.utf8))).base64EncodedString()
    }

    private static func summary(_ report: RaceReport) -> String {
        var text = "<section id=\"summary\" aria-label=\"Summary\"><h2>What the screens showed</h2>\n<ul>"
        let shown = max(1, report.end - report.start)
        for (mode, micros) in report.publishedDurations where micros > 0 {
            let name = mode?.rawValue ?? "unknown"
            let percent = Double(micros) * 100 / Double(shown)
            text += "<li data-summary-mode=\"\(name)\"><span class=\"swatch m-\(name)\"></span>"
            text += "\(label(mode)): \(duration(micros)) (\(percent.formatted1) %)</li>"
        }
        text += "</ul>\n"
        let counts = report.counts
        text += "<p id=\"counts\" data-changes=\"\(counts.changes)\" data-contests=\"\(counts.contests)\" "
        text += "data-forged=\"\(counts.forgedFrames)\" data-rejected=\"\(counts.rejectedFrames)\" "
        text += "data-gaps=\"\(report.gaps.count)\">\(counts.changes) changes of what the screens showed; "
        text += "\(counts.contests) contests; \(counts.forgedFrames) forged frames; "
        text += "\(counts.rejectedFrames) rejected frames; "
        text += report.gaps.count == 1 ? "1 scanner gap" : "\(report.gaps.count) scanner gaps"
        if !report.gaps.isEmpty {
            text += " (\(duration(report.gaps.reduce(0) { $0 + ($1.end - $1.start) })) in all)"
        }
        text += ". \(counts.reports) advertising reports, \(counts.signals) GeoRacing signals"
        if let since = report.countsSince { text += " (counts \(HTMLText.escaped(since)))" }
        text += ".</p>\n"
        let evacuations = report.evacuations
        if evacuations.isEmpty {
            text += "<p>No evacuation.</p><ul id=\"evacs\"></ul>\n"
        } else {
            text += "<p class=\"warn\">Evacuation: \(evacuations.count) stretch"
            text += "\(evacuations.count == 1 ? "" : "es") (marked \u{25BC} above its row):</p><ul id=\"evacs\"></ul>\n"
        }
        if !report.gaps.isEmpty { text += "<p>Scanner gaps (no report for 10 s or more):</p>" }
        text += "<ul id=\"gaps\" aria-label=\"Scanner gaps\"></ul>\n"
        if report.droppedStretches > 0 {
            text += "<p class=\"warn\">\(report.droppedStretches) oldest stretches were dropped "
            text += "(the history's bounds): the chart starts later than the recording.</p>\n"
        }
        return text + "</section>\n"
    }

    private static let chart = """
        <section aria-label="Timeline"><h2>Timeline</h2>
        <div id="controls"><button id="zin" type="button">Zoom in (+)</button>\
        <button id="zout" type="button">Zoom out (-)</button><button id="fit" type="button">Whole race (0)</button>\
        <span id="view" class="muted"></span></div>
        <div id="chart" tabindex="0" aria-label="Timeline chart: mouse wheel or + and - zoom, drag or arrow keys \
        pan, Tab moves through the stretches; the table below lists every one">
        <svg id="svg" xmlns="http://www.w3.org/2000/svg" width="800" height="100"><defs>\
        <pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">\
        <rect width="3" height="6" fill="#fff" fill-opacity="0.55"/></pattern>\
        <pattern id="held" width="4" height="4" patternUnits="userSpaceOnUse" patternTransform="rotate(-45)">\
        <rect width="2" height="4" fill="#000" fill-opacity="0.3"/></pattern>\
        <pattern id="evac" width="8" height="8" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">\
        <rect width="8" height="8" fill="#d20000"/><rect width="3" height="8" fill="#fff"/></pattern>\
        </defs></svg>
        <div id="tip" role="tooltip" hidden></div></div>
        <p class="muted">Hatched race control: stale (no successful fetch within remote.stale_after). Darker \
        stripes on a zone: the claim was held for the de-escalation hold. Dashed outline: contested. Grey band: \
        no reports (scanner gap). Red and white: evacuation, marked \u{25BC}.</p></section>

        """

    /// A header, then the script adds the rows in tables of 200, each laid out only when scrolled
    /// near (`content-visibility`): a day's 20,000 rows would otherwise take seconds to lay out.
    private static let table = """
        <section aria-label="Every stretch"><h2>Every stretch</h2>
        <div id="stretches"><table><colgroup id="cols"><col class="c1"><col class="c2"><col class="c3">\
        <col class="c4"><col class="c5"><col class="c6"></colgroup><thead><tr><th>Row</th><th>Mode</th><th>From</th>\
        <th>To</th><th>For</th><th>Details</th></tr></thead></table></div></section>

        """

    private static let noScript =
        "<noscript><p>The chart and the table need JavaScript; the summary above does not.</p></noscript>\n"
        + "</body></html>\n"

    static func label(_ mode: TrackMode?) -> String {
        switch mode {
        case .normal: "Green"
        case .yellowFlag: "Yellow flag"
        case .vsc: "VSC"
        case .safetyCar: "Safety car"
        case .redFlag: "Red flag"
        case .evacuation: "EVACUATION"
        case nil: "No signal / unknown"
        }
    }

    /// `1 h 02 min`, `3 min 05 s`, `12.5 s`, `250 ms`.
    static func duration(_ micros: Int64) -> String {
        let millis = micros / 1000
        if millis < 1000 { return "\(millis) ms" }
        let seconds = millis / 1000
        if seconds < 60 { return "\(seconds).\(millis % 1000 / 100) s" }
        let minutes = seconds / 60
        if minutes < 60 { return "\(minutes) min \(pad(seconds % 60)) s" }
        return "\(minutes / 60) h \(pad(minutes % 60)) min"
    }

    private static func pad(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
}

extension Double {
    fileprivate var formatted1: String {
        let tenths = Int64((self * 10).rounded())
        return "\(tenths / 10).\(tenths % 10)"
    }
}
