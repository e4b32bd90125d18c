/// `/preview`: every flag in every configured language on one page, each in a frame of the
/// screen's size, so a venue checks its catalogues and its exit before a race weekend, and the
/// tests check that every headline fits (docs/kiosk-web.md, "The preview"). Each frame is the real
/// page (`/preview/frame`) showing a sample state, without a stream; the preview's script marks
/// each frame whose headline is wider than its box (`data-fits="false"`) and counts them.
enum WebKioskPreview {
    /// What to show: the frames' size (`?width=800&height=480`, each 200 to 4000; 1920×1080 by
    /// default), one language only (`&lang=es`), and at full size (`&scale=1`) instead of scaled
    /// down to fit a screen.
    struct Size: Equatable {
        var width = 1920
        var height = 1080
        var language: String?
        var fullSize = false

        init(query: [String: String]) {
            language = query["lang"]
            fullSize = query["scale"] == "1"
            if let width = query["width"].flatMap({ Int($0) }), (200...4000).contains(width) { self.width = width }
            if let height = query["height"].flatMap({ Int($0) }), (200...4000).contains(height) {
                self.height = height
            }
        }
    }

    /// What the frames show, in order: each flag once.
    static let flags = KioskView.Flag.allCases

    /// The sample view of `flag` in `catalogue`: zone 7 "Main grandstand" from a track beacon,
    /// the exit as configured for an evacuation, and the daemon unreachable for NO SIGNAL.
    static func view(_ flag: KioskView.Flag, catalogue: KioskCatalogue, exit: KioskExit, now: Int64)
        -> KioskView
    {
        guard let mode = flag.mode else {
            let link = KioskView.Link.unreachable(since: now - 12_000_000, reason: "the daemon is not running")
            return KioskView(link: link, now: now, catalogue: catalogue, exit: exit)
        }
        let state = StateMessage(
            seq: 1, time: WallTime(micros: now - 3_000_000), mode: mode, source: "beacon", zone: 7,
            zoneName: "Main grandstand", beacon: nil, remote: nil, scanner: ScannerStatus(backend: "hci", state: .up))
        return KioskView(link: .connected(state), now: now, catalogue: catalogue, exit: exit)
    }

    /// The preview page: a frame per language and flag, scaled down to fit a screen.
    static func page(_ presentation: KioskPresentation, size: Size) -> [UInt8] {
        var page = """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8">
            <title>beacond kiosk preview</title>
            <style>\(WebKioskAssets.previewStyle)</style>
            </head>

            """
        page += "<body data-width=\"\(size.width)\" data-height=\"\(size.height)\""
        page += (size.fullSize ? " data-full-size" : "") + ">\n"
        page += "<h1>beacond kiosk: every flag in every language at \(size.width)×\(size.height)</h1>\n"
        page += "<p id=\"summary\">Checking…</p>\n"
        for catalogue in presentation.catalogues where size.language == nil || size.language == catalogue.language {
            let language = HTMLText.escaped(catalogue.language)
            page += "<section lang=\"\(language)\"><h2>\(HTMLText.escaped(catalogue.name))</h2>\n"
            for flag in flags {
                // A language code is ASCII letters, digits and `-` (`KioskCatalogue.isLanguageCode`): URL-safe.
                let source = "/preview/frame?lang=\(language)&amp;flag=\(flag.rawValue)"
                page += "<figure class=\"cell\" data-lang=\"\(language)\" data-flag=\"\(flag.rawValue)\">"
                page += "<iframe src=\"\(source)\" width=\"\(size.width)\" height=\"\(size.height)\""
                page += " title=\"\(language) \(flag.rawValue)\"></iframe>"
                page += "<figcaption>\(language) · \(flag.rawValue)</figcaption></figure>\n"
            }
            page += "</section>\n"
        }
        page += "<script>\(WebKioskAssets.previewScript)</script>\n</body></html>\n"
        return Array(page.utf8)
    }

    /// One frame: the real page showing `flag` in the language `query["lang"]` names; nil when the
    /// query names no configured language or no flag.
    static func frame(_ presentation: KioskPresentation, query: [String: String], now: Int64) -> [UInt8]? {
        guard let catalogue = presentation.catalogues.first(where: { $0.language == query["lang"] }),
            let flag = query["flag"].flatMap(KioskView.Flag.init(rawValue:))
        else { return nil }
        let view = Self.view(flag, catalogue: catalogue, exit: presentation.exit, now: now)
        let document = WebKioskViewDocument([view], period: presentation.period)
        let lost = WebKioskPage.lostView(KioskPresentation(catalogues: [catalogue]))
        return WebKioskPage.html(view: document, lost: lost, steady: true, preview: true)
    }

    /// `name=value&…` of a request's URI, percent-decoded; later names win, at most 8 are read.
    static func query(of uri: String) -> [String: String] {
        guard let mark = uri.firstIndex(of: "?") else { return [:] }
        var result: [String: String] = [:]
        for pair in uri[uri.index(after: mark)...].split(separator: "&").prefix(8) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, let name = percentDecoded(parts[0]), let value = percentDecoded(parts[1]) else {
                continue
            }
            result[name] = value
        }
        return result
    }

    private static func percentDecoded(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
                continue
            }
            guard let high = iterator.next().flatMap(IntegerText.hexDigitValue),
                let low = iterator.next().flatMap(IntegerText.hexDigitValue)
            else {
                return nil
            }
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
    }
}
