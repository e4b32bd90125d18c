import BeacondTestSupport
import Foundation
import Testing

/// Issue 31 in Chromium: the web kiosk's `/preview` lays out every flag in every shipped language
/// at a screen's size, in one page load per size, and every headline must fit its box (its
/// scroll width no more than its client width); then screenshots of the es, ca and en frames at
/// both sizes, each checked for the flag's colour and words. The kiosk is the real binary with
/// `--config` naming the seven languages and an exit; no daemon is needed (the preview shows
/// sample states).
@Suite(
    .chromiumInstalled, .python3Installed("it decodes the screenshots"))
struct KioskLanguagesBrowserTests {
    static let languages = ["es", "ca", "en", "fr", "de", "it", "pt"]
    static let flags = ["green", "yellow", "vsc", "safety_car", "red", "evacuation", "no_signal"]
    static let colours = [
        "green": "#009639", "yellow": "#ffd600", "vsc": "#ff8200", "safety_car": "#ff8200", "red": "#d20000",
        "evacuation": "#d20000", "no_signal": "#5a5a5a",
    ]
    static let sizes = [(800, 480), (1920, 1080)]

    /// A web kiosk reading the seven languages and an exit from its config file.
    static func kiosk() throws -> (WebKioskProcess, String) {
        let config = BeacondProcess.temporaryFile("kiosk-languages.yaml")
        try """
        kiosk:
          languages: [\(languages.joined(separator: ", "))]
          exit:
            direction: up_right
            name: Puerta 3 / Gate 3
            distance_m: 120

        """.write(toFile: config, atomically: true, encoding: .utf8)
        let kiosk = try WebKioskProcess(
            ["kiosk", "--web", "127.0.0.1:0", "--config", config, "--socket", "/nonexistent/beacond.sock"])
        let url = try #require(kiosk.waitForURL(), "no URL: \(kiosk.logText)")
        #expect(kiosk.logText == "", "catalogue problems: \(kiosk.logText)")
        return (kiosk, url)
    }

    /// A catalogue's value for `key`, read from languages/CODE.yaml (`key: text` or `key: "text"`).
    static func catalogueText(_ language: String, _ key: String) throws -> String {
        let file = RepositoryPaths.root.appendingPathComponent("languages/\(language).yaml").path
        for line in try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n")
        where line.hasPrefix(key + ": ") {
            let value = line.dropFirst(key.count + 2)
            return value.hasPrefix("\"") ? String(value.dropFirst().dropLast()) : String(value)
        }
        throw TestSupportError("\(language).yaml has no \(key)")
    }

    /// Each preview cell's attributes: (lang, flag) → attribute → value.
    static func cells(_ dom: String) -> [String: [String: String]] {
        var cells: [String: [String: String]] = [:]
        for match in dom.matches(of: /<figure class="cell"([^>]*)>/) {
            var attributes: [String: String] = [:]
            for pair in match.output.1.matches(of: /([a-z-]+)="([^"]*)"/) {
                attributes[String(pair.output.1)] = String(pair.output.2)
            }
            cells["\(attributes["data-lang"] ?? "")/\(attributes["data-flag"] ?? "")"] = attributes
        }
        return cells
    }

    static func dump(_ url: String, window: String = "1400,1000") throws -> String {
        let result = try WebKioskBrowserTests.browser([
            "--virtual-time-budget=20000", "--window-size=\(window)", "--dump-dom", url,
        ])
        return result.stdout
    }

    /// Every flag in every language fits, at each size: one page load per size.
    @Test(arguments: sizes.map { "\($0.0)x\($0.1)" })
    func everyHeadlineFitsItsScreen(size: String) throws {
        let (kiosk, url) = try Self.kiosk()
        defer { kiosk.stop() }
        let parts = size.split(separator: "x")
        let dom = try Self.dump(url + "preview?width=\(parts[0])&height=\(parts[1])")
        let expected = Self.languages.count * Self.flags.count
        #expect(dom.contains("data-checked=\"\(expected)\" data-overflows=\"0\""), "\(dom.prefix(2000))")
        let cells = Self.cells(dom)
        #expect(cells.count == expected)
        for language in Self.languages {
            for flag in Self.flags {
                let cell = cells["\(language)/\(flag)"]
                #expect(cell?["data-fits"] == "true", "\(language) \(flag) at \(size): \(cell ?? [:])")
                #expect(cell?["data-headline"] == (try Self.catalogueText(language, flag)), "\(language) \(flag)")
            }
        }
    }

    /// es, ca and en at both sizes: each flag's frame in the flag's colour, saying its words.
    @Test(arguments: ["es", "ca", "en"], sizes.map { "\($0.0)x\($0.1)" })
    func screenshotsShowTheFlagsColourAndWords(language: String, size: String) throws {
        let (kiosk, url) = try Self.kiosk()
        defer { kiosk.stop() }
        let window = size.replacingOccurrences(of: "x", with: ",")
        let parts = size.split(separator: "x")
        let dom = try Self.dump(url + "preview?width=\(parts[0])&height=\(parts[1])&lang=\(language)")
        let cells = Self.cells(dom)
        let directory = BeacondProcess.temporaryFile("kiosk-language-screenshots")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        for flag in Self.flags {
            #expect(cells["\(language)/\(flag)"]?["data-headline"] == (try Self.catalogueText(language, flag)))
            // Laid out at the screen's size, drawn at half its pixels: the layout is the screen's,
            // and the decoder has a quarter of the pixels to read.
            let file = directory + "/\(language)-\(flag)-\(size).png"
            let shot = try WebKioskBrowserTests.browser([
                "--hide-scrollbars", "--force-device-scale-factor=0.5", "--window-size=\(window)",
                "--screenshot=\(file)", url + "preview/frame?lang=\(language)&flag=\(flag)",
            ])
            #expect(FileManager.default.fileExists(atPath: file), "no screenshot: \(shot.stderr.suffix(300))")
            let decoded = try WebKioskBrowserTests.run(
                "/usr/bin/python3", [RepositoryPaths.fixture("png_colours.py"), file])
            let fields = decoded.stdout.split(separator: " ")
            #expect(
                fields.first.map(String.init) == Self.colours[flag], "\(language) \(flag) \(size): \(decoded.stdout)")
            let share = fields.last.flatMap { Double($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? 0
            #expect(share > 0.5, "\(language) \(flag) \(size): the flag's colour covers \(share)")
        }
    }
}
