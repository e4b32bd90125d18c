/// The page at `/`, and the view as JSON (docs/kiosk-web.md, "The view").
enum WebKioskPage {
    /// What the page shows when its stream to the kiosk server is lost.
    static let lostView = WebKioskViewDocument(
        flag: .noSignal, status: "NO SIGNAL — kiosk server unreachable",
        details: ["The page lost its event stream from beacond kiosk", "Reconnecting…"])

    /// The whole page: `view` is painted before the first frame (it is also in `data-view`, for
    /// the script); `steady` stops the evacuation flash.
    static func html(view: WebKioskViewDocument, steady: Bool) -> [UInt8] {
        var page = """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8">
            <meta name="viewport" content="width=device-width,initial-scale=1">
            <title>beacond kiosk</title>
            <style>\(WebKioskAssets.style)</style>
            </head>

            """
        page += "<body class=\"\(steady ? "steady" : "")\" data-flag=\"\(view.flag.rawValue)\""
        page += " data-view=\"\(attributeEscaped(view.json()))\" data-lost=\"\(attributeEscaped(lostView.json()))\">\n"
        page += "<main id=\"flag\"><h1 id=\"headline\">\(attributeEscaped(view.headline))</h1>\n<ul id=\"details\">"
        for line in view.details { page += "<li>\(attributeEscaped(line))</li>" }
        page += "</ul>\n<p id=\"status\" role=\"status\" aria-live=\"assertive\">\(attributeEscaped(view.status))</p>"
        page += "</main>\n<script>\(WebKioskAssets.script)</script>\n</body></html>\n"
        return Array(page.utf8)
    }

    /// `text` safe inside a double- or single-quoted HTML attribute and as element text.
    static func attributeEscaped(_ text: String) -> String {
        var result = ""
        result.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "'": result += "&#39;"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}

/// One view as the browser gets it: `KioskView` plus the colours of both flash phases.
struct WebKioskViewDocument: Hashable, Sendable {
    var flag: KioskView.Flag
    var headline: String
    var status: String
    var details: [String]
    var flashes: Bool

    init(_ view: KioskView) {
        self.init(flag: view.flag, status: view.status, details: view.details)
        flashes = view.flashes
    }

    init(flag: KioskView.Flag, status: String, details: [String]) {
        self.flag = flag
        headline = flag.headline
        self.status = status
        self.details = details
        flashes = flag == .evacuation
    }

    /// `{"flag":…,"headline":…,"status":…,"details":[…],"flashes":…,"background":"#rrggbb",
    /// "foreground":…,"flash_background":…,"flash_foreground":…}`
    package func render(into writer: inout JSONWriter) {
        let colors = KioskColors.of(flag)
        let alternate = KioskColors.of(flag, alternate: true)
        writer.beginObject()
        writer.key("flag"); writer.string(flag.rawValue)
        writer.key("headline"); writer.string(headline)
        writer.key("status"); writer.string(status)
        writer.key("details")
        writer.beginArray()
        for line in details { writer.string(line) }
        writer.endArray()
        writer.key("flashes"); writer.bool(flashes)
        writer.key("background"); writer.string(colors.background.hex)
        writer.key("foreground"); writer.string(colors.foreground.hex)
        writer.key("flash_background"); writer.string(alternate.background.hex)
        writer.key("flash_foreground"); writer.string(alternate.foreground.hex)
        writer.endObject()
    }

    func json() -> String {
        var writer = JSONWriter()
        render(into: &writer)
        return String(decoding: writer.bytes, as: UTF8.self)
    }
}
