/// The page at `/`, and the view as JSON (docs/kiosk-web.md, "The view").
enum WebKioskPage {
    /// What the page shows when its stream to the kiosk server is lost, in each language of
    /// `presentation`.
    static func lostView(_ presentation: KioskPresentation) -> WebKioskViewDocument {
        WebKioskViewDocument(
            lost: presentation.catalogues.map { catalogue in
                WebKioskViewDocument.Words(
                    language: catalogue.language, headline: catalogue.text(.noSignal),
                    status: catalogue.text(.pageUnreachable), guidance: [],
                    details: [catalogue.text(.pageLost), catalogue.text(.reconnecting)],
                    say: catalogue.text(.sayNoSignal))
            }, period: presentation.period)
    }

    /// What the page shows when its stream is lost, in English.
    static var lostView: WebKioskViewDocument { lostView(KioskPresentation()) }

    /// The whole page: `view` is painted before the first frame (it is also in `data-view`, for
    /// the script, with `lost` for when the stream is lost); `steady` stops the evacuation flash.
    /// `preview`: a frame of `/preview`, painted once, with no stream.
    static func html(
        view: WebKioskViewDocument, lost: WebKioskViewDocument = lostView, steady: Bool, preview: Bool = false
    ) -> [UInt8] {
        let words = view.languages[0]
        var page = """
            <!DOCTYPE html>
            <html lang="\(HTMLText.escaped(words.language))"><head><meta charset="utf-8">
            <meta name="viewport" content="width=device-width,initial-scale=1">
            <title>beacond kiosk</title>
            <style>\(WebKioskAssets.style)</style>
            </head>

            """
        page += "<body class=\"\(steady ? "steady" : "")\"" + (preview ? " data-preview" : "")
        page += " data-flag=\"\(view.flag.rawValue)\""
        page += " data-view=\"\(HTMLText.escaped(view.json()))\" data-lost=\"\(HTMLText.escaped(lost.json()))\">\n"
        page += "<main id=\"flag\" lang=\"\(HTMLText.escaped(words.language))\">"
        page += "<div id=\"arrow\"\(view.arrow == nil ? " hidden" : "")>\(WebKioskAssets.arrowSVG)</div>\n"
        page += "<div id=\"words\"><h1 id=\"headline\">\(HTMLText.escaped(words.headline))</h1>\n<ul id=\"guidance\">"
        for line in words.guidance { page += "<li>\(HTMLText.escaped(line))</li>" }
        page += "</ul>\n<ul id=\"details\">"
        for line in words.details { page += "<li>\(HTMLText.escaped(line))</li>" }
        page += "</ul></div>\n<p id=\"status\" role=\"status\" aria-live=\"assertive\">"
        page += "\(HTMLText.escaped(words.status))</p>"
        page += "</main>\n<script>\(WebKioskAssets.script)</script>\n</body></html>\n"
        return Array(page.utf8)
    }
}

/// One view as the browser gets it: `KioskView` in each language of the cycle, plus the colours
/// of both flash phases, the arrow and the language period. The first language's words are also
/// at the top level (`headline`, `status`, `details`), as before there were languages.
struct WebKioskViewDocument: Hashable, Sendable {
    /// One language's words.
    struct Words: Hashable, Sendable {
        var language: String
        var headline: String
        var status: String
        var guidance: [String]
        var details: [String]
        /// What the page says aloud in this language when it speaks (`?speak=1`).
        var say = ""
    }

    var flag: KioskView.Flag
    var flashes: Bool
    var arrow: BlockArrow.Direction?
    /// Milliseconds each language stays on screen.
    var periodMillis: Int64
    /// Never empty: the first is shown first after a change of flag.
    var languages: [Words]
    /// The evacuation alarm goes before the words, which are said again every
    /// `speakRepeatMillis` (docs/kiosk-web.md, "The page's voice").
    var alarm = false
    var speakRepeatMillis: Int64 = KioskPresentation().speakRepeat / 1000
    /// The published state the view shows, its `seq` and `ts`; nil while the daemon is unreachable.
    var seq: Int?
    var published: WallTime?

    /// The views of one moment, one per language (all of one flag).
    init(_ views: [KioskView], period: Int64) {
        let first = views.first ?? KioskView(link: .unreachable(since: 0, reason: ""), now: 0)
        flag = first.flag
        flashes = first.flashes
        arrow = first.arrow
        periodMillis = max(1, period / 1000)
        languages = (views.isEmpty ? [first] : views).map { view in
            Words(
                language: view.language, headline: view.headline, status: view.status, guidance: view.guidance,
                details: view.details)
        }
    }

    /// The view of `link` now, in each language of `presentation`, with its words to say.
    init(link: KioskView.Link, now: Int64, presentation: KioskPresentation) {
        let views = presentation.catalogues.map { catalogue in
            KioskView(link: link, now: now, catalogue: catalogue, exit: presentation.exit)
        }
        self.init(views, period: presentation.period)
        let announcement = KioskAnnouncement(link: link, catalogues: presentation.catalogues, exit: presentation.exit)
        alarm = announcement.alarm
        speakRepeatMillis = presentation.speakRepeat / 1000
        for (index, spoken) in announcement.spoken.enumerated() where index < languages.count {
            languages[index].say = spoken.text
        }
        if case .connected(let state) = link {
            seq = state.seq
            published = state.time
        }
    }

    /// One view, alone in its cycle.
    init(_ view: KioskView) {
        self.init([view], period: KioskPresentation().period)
    }

    /// An English view of `flag` with these words.
    init(flag: KioskView.Flag, status: String, details: [String]) {
        self.flag = flag
        flashes = flag == .evacuation
        arrow = nil
        periodMillis = KioskPresentation().period / 1000
        languages = [Words(language: "en", headline: flag.headline, status: status, guidance: [], details: details)]
    }

    /// The first language's words.
    var headline: String { languages[0].headline }
    var status: String { languages[0].status }
    var details: [String] {
        get { languages[0].details }
        set { languages[0].details = newValue }
    }

    /// NO SIGNAL in `words`' languages.
    init(lost words: [Words], period: Int64) {
        flag = .noSignal
        flashes = false
        arrow = nil
        periodMillis = max(1, period / 1000)
        languages =
            words.isEmpty
            ? [Words(language: "en", headline: "NO SIGNAL", status: "", guidance: [], details: [])] : words
    }

    /// `{"flag":…,"headline":…,"status":…,"details":[…],"flashes":…,"background":"#rrggbb",
    /// "foreground":…,"flash_background":…,"flash_foreground":…,"arrow":…,"arrow_deg":…,
    /// "period_ms":…,"alarm":…,"speak_repeat_ms":…,"seq":…,"ts":…,
    /// "languages":[{"lang":…,"headline":…,"status":…,"guidance":[…],"details":[…],"say":…}]}`
    package func render(into writer: inout JSONWriter) {
        let colors = KioskColors.of(flag)
        let alternate = KioskColors.of(flag, alternate: true)
        let first = languages[0]
        writer.beginObject()
        writer.key("flag"); writer.string(flag.rawValue)
        writer.key("headline"); writer.string(first.headline)
        writer.key("status"); writer.string(first.status)
        writer.key("details"); Self.strings(first.details, into: &writer)
        writer.key("flashes"); writer.bool(flashes)
        writer.key("background"); writer.string(colors.background.hex)
        writer.key("foreground"); writer.string(colors.foreground.hex)
        writer.key("flash_background"); writer.string(alternate.background.hex)
        writer.key("flash_foreground"); writer.string(alternate.foreground.hex)
        writer.key("arrow"); writer.string(orNull: arrow?.rawValue)
        writer.key("arrow_deg"); writer.int(arrow?.degrees ?? 0)
        writer.key("period_ms"); writer.int(Int(periodMillis))
        writer.key("alarm"); writer.bool(alarm)
        writer.key("speak_repeat_ms"); writer.int(Int(speakRepeatMillis))
        writer.key("seq"); writer.int(seq)
        writer.key("ts"); writer.time(published)
        writer.key("languages")
        writer.beginArray()
        for words in languages {
            writer.beginObject()
            writer.key("lang"); writer.string(words.language)
            writer.key("headline"); writer.string(words.headline)
            writer.key("status"); writer.string(words.status)
            writer.key("guidance"); Self.strings(words.guidance, into: &writer)
            writer.key("details"); Self.strings(words.details, into: &writer)
            writer.key("say"); writer.string(words.say)
            writer.endObject()
        }
        writer.endArray()
        writer.endObject()
    }

    private static func strings(_ lines: [String], into writer: inout JSONWriter) {
        writer.beginArray()
        for line in lines { writer.string(line) }
        writer.endArray()
    }

    func json() -> String {
        var writer = JSONWriter()
        render(into: &writer)
        return String(decoding: writer.bytes, as: UTF8.self)
    }
}
