import BeacondTestSupport
import Foundation
import Testing

@testable import BeacondClient
@testable import BeacondCore

@Suite struct TerminalTextTests {
    @Test(arguments: [
        ("\u{0}", "\\u{0}"), ("\u{7}", "\\u{7}"), ("\u{8}", "\\u{8}"), ("\t", "\\u{9}"), ("\n", "\\u{a}"),
        ("\r", "\\u{d}"), ("\u{1B}", "\\u{1b}"), ("\u{1F}", "\\u{1f}"), ("\u{7F}", "\\u{7f}"),
        ("\u{80}", "\\u{80}"), ("\u{85}", "\\u{85}"), ("\u{9B}", "\\u{9b}"), ("\u{9F}", "\\u{9f}"),
        ("\u{202A}", "\\u{202a}"), ("\u{202B}", "\\u{202b}"), ("\u{202C}", "\\u{202c}"),
        ("\u{202D}", "\\u{202d}"), ("\u{202E}", "\\u{202e}"), ("\u{2066}", "\\u{2066}"),
        ("\u{2067}", "\\u{2067}"), ("\u{2068}", "\\u{2068}"), ("\u{2069}", "\\u{2069}"),
        ("\u{2028}", "\\u{2028}"), ("\u{2029}", "\\u{2029}"),
    ])
    func everyUnsafeClassIsEscaped(raw: String, escaped: String) {
        #expect(TerminalText.escaped("a" + raw + "b") == "a" + escaped + "b")
        #expect(TerminalText.logged(raw) == escaped)
    }

    @Test func safeTextIsKept() {
        let text = "Drapeau vert — zone 3 ✓ é 日本 \u{200F} \u{2030} ~ \u{A0}"
        #expect(TerminalText.escaped(text) == text)
    }

    @Test func aRightToLeftOverrideCannotReverseTheRestOfALine() {
        let spoof = "evacuation\u{202E}lamron"
        #expect(TerminalText.escaped(spoof) == "evacuation\\u{202e}lamron")
    }

    @Test func longTextIsCutAtTheLimitWithAnEllipsis() {
        let long = String(repeating: "a", count: 600)
        let cut = TerminalText.logged(long)
        #expect(cut == String(repeating: "a", count: 512) + "…")
        #expect(TerminalText.logged(String(repeating: "a", count: 512)) == String(repeating: "a", count: 512))
    }

    @Test func theCutFallsOnAScalarBoundary() {
        // 511 ASCII bytes, then a 3-byte scalar that does not fit.
        let text = String(repeating: "a", count: 511) + "日本"
        let cut = TerminalText.logged(text)
        #expect(cut == String(repeating: "a", count: 511) + "…")
        // 4-byte scalars: 128 of them fill 512 bytes exactly.
        let emoji = String(repeating: "🏁", count: 130)
        #expect(TerminalText.logged(emoji) == String(repeating: "🏁", count: 128) + "…")
    }

    @Test func theCutNeverSplitsAnEscape() {
        let text = String(repeating: "a", count: 508) + "\u{1B}[2J"
        // "\u{1b}" takes 6 bytes and does not fit after 508: the cut comes before it.
        #expect(TerminalText.logged(text) == String(repeating: "a", count: 508) + "…")
        #expect(TerminalText.escaped("\u{1B}\u{1B}", limit: 6) == "\\u{1b}…")
        #expect(TerminalText.escaped("abc", limit: 0) == "…")
        #expect(TerminalText.escaped("", limit: 0) == "")
    }
}

@Suite struct ConfigKeyEscapingTests {
    @Test func anUnknownKeyFromTheFileIsEscapedInTheError() {
        let problem = ConfigurationProblem(
            file: "/etc/beacond/beacond.yaml", key: "fusion.po\u{202E}licy\u{1B}[2J",
            line: 3, column: 3, reason: "unknown key")
        #expect(problem.description == "/etc/beacond/beacond.yaml:3:3: fusion.po\\u{202e}licy\\u{1b}[2J: unknown key")
    }

    @Test func anUnknownKeyInAFileIsReportedEscapedByTheLoader() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("bidi-\(getpid()).yaml").path
        try "fusion:\n  \"po\u{202E}licy\": safety\n".write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        do {
            _ = try DaemonConfiguration.load(path: path, overrides: DaemonOverrides())
            Issue.record("an unknown key was accepted")
        } catch {
            let text = "\(error)"
            #expect(text.contains("fusion.po\\u{202e}licy"))
            #expect(!text.unicodeScalars.contains { TerminalText.needsEscape($0) && $0 != "\n" })
        }
    }
}

@Suite struct JSONTerminalSafetyTests {
    @Test func c1BidiAndLineSeparatorsAreEscapedInJSONStringsAndDecodeToTheSameText() throws {
        let text = "a\u{202E}b\u{2028}c\u{85}d\u{2069}e\u{1B}f\u{2030}g é"
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("message"); writer.string(text)
        writer.endObject()
        let json = String(decoding: writer.bytes, as: UTF8.self)
        #expect(json == "{\"message\":\"a\\u202eb\\u2028c\\u0085d\\u2069e\\u001bf\u{2030}g é\"}")
        let decoded = try JSONSerialization.jsonObject(with: Data(writer.bytes)) as? [String: String]
        #expect(decoded?["message"] == text)
    }
}
