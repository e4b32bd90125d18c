import BLEPayload
import BeacondTestSupport
import Foundation
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// Issue 31, the page's own voice, in Debian's Chromium: `/?speak=1` announces the daemon's
/// evacuation with the browser's speech synthesis (each language with its `lang`) after a WebAudio
/// alarm, and again every `kiosk.speak_repeat`. The page runs in real time, driven over the
/// DevTools protocol (Fixtures/chromium_page.py); a setup script the browser injects before the
/// page's own records each utterance handed to `speechSynthesis.speak` and each oscillator made.
/// Headless Chromium has no sound card and no voices: what is checked is what the page asked the
/// browser to say and play, and whether the browser let it play (the autoplay policy).
@Suite(
    .serialized,
    .chromiumInstalled, .python3Installed("it drives Chromium"))
struct WebKioskVoiceBrowserTests {
    struct Utterance: Decodable, Equatable {
        var lang: String
        var text: String
    }

    struct Heard: Decodable {
        /// What the page says it announced last (`data-said`), and how often.
        var said: String?
        var count: String?
        var audio: String?
        var utterances: [Utterance]
        var tones: [Double]
    }

    static let record = """
        window.__utterances=[];window.__tones=[];
        (function(){var speak=speechSynthesis.speak.bind(speechSynthesis);
        speechSynthesis.speak=function(u){window.__utterances.push({lang:u.lang,text:u.text});speak(u)};
        var make=AudioContext.prototype.createOscillator;
        AudioContext.prototype.createOscillator=function(){var o=make.call(this);window.__tones.push(o);return o}})();
        """

    static let result = """
        ({said:document.body.getAttribute("data-said"),count:document.body.getAttribute("data-said-count"),
        audio:document.body.getAttribute("data-audio"),utterances:window.__utterances,
        tones:window.__tones.map(function(o){return o.frequency.value})})
        """

    /// A kiosk in es, ca and en with an exit, announcing every 2 s, following a daemon's
    /// evacuation in zone 1; the page opened until `until` holds.
    func heard(until: String, flags: [String]) throws -> (heard: Heard, expected: [Utterance]) {
        let daemon = try DaemonProcess(["--backend", "replay", "--replay", KioskTmuxTests.evacuation, "--speed", "1"])
        defer { _ = daemon.stop() }
        #expect(daemon.waitForLog("listening on"))
        let languages = ["es", "ca", "en"]
        let config = try KioskVoiceEndToEndTests.config(languages: languages)
        let kiosk = try WebKioskProcess([
            "kiosk", "--web", "127.0.0.1:0", "--config", config, "--socket", daemon.socket,
        ])
        defer { kiosk.stop() }
        let url = try #require(kiosk.waitForURL())
        let run = try WebKioskBrowserTests.run(
            "/usr/bin/python3",
            [
                RepositoryPaths.fixture("chromium_page.py"), url + "?speak=1", "--until", until, "--timeout", "20",
                "--setup", Self.record, "--result", Self.result,
            ] + flags.map { "--chromium-flag=\($0)" })
        #expect(run.status == 0, "\(run.stdout.suffix(800)) \(run.stderr.suffix(400))")
        let heard = try JSONDecoder().decode(Heard.self, from: Data(run.stdout.utf8))
        let catalogues = languages.compactMap { code in
            KioskVoiceEndToEndTests.catalogues.first { $0.language == code }
        }
        let exit = KioskExit(direction: .upRight, name: "Puerta 3 / Gate 3", distanceMetres: 120)
        let state = StateMessage(
            seq: 1, time: WallTime(micros: 0), mode: "evacuation", source: "beacon", zone: 1, beacon: nil, remote: nil,
            scanner: ScannerStatus(backend: "replay", state: .up))
        let announcement = KioskAnnouncement(link: .connected(state), catalogues: catalogues, exit: exit)
        return (heard, announcement.spoken.map { Utterance(lang: $0.language, text: $0.text) })
    }

    /// With the browser unit's flag: the alarm (960 and 770 Hz, three times), then each language's
    /// words with its `lang`, the same words as the terminal kiosk's voice; 2 s later, again.
    @Test func withAutoplayAllowedThePageSoundsTheAlarmAndSpeaksEachLanguageAgainAndAgain() throws {
        let (heard, expected) = try heard(
            until: "window.__utterances.length>=6", flags: ["--autoplay-policy=no-user-gesture-required"])
        #expect(heard.audio == "running", "WebAudio was allowed to play")
        #expect(Array(heard.utterances.prefix(3)) == expected)
        #expect(heard.utterances.count >= 6 && Array(heard.utterances[3..<6]) == expected, "said again")
        #expect(expected.first?.text.hasPrefix("Evacuación.") == true && expected[1].text.contains("Puerta 3"))
        #expect(Array(heard.tones.prefix(6)) == [960, 770, 960, 770, 960, 770], "\(heard.tones)")
        #expect(heard.tones.count >= 12, "an alarm before each announcement: \(heard.tones)")
        #expect(Int(heard.count ?? "") ?? 0 >= 2)
        #expect(heard.said?.contains("\"alarm\":true") == true)
    }

    /// Without the flag, and before anyone touches the screen, Chromium keeps the page's audio
    /// suspended: no alarm is made, the words are still handed over (the browser decides), and
    /// the page says what it was allowed (`data-audio`).
    @Test func withoutAutoplayTheAudioStaysSuspendedAndNoAlarmIsMade() throws {
        let (heard, expected) = try heard(until: "window.__utterances.length>=3", flags: [])
        #expect(heard.audio == "suspended")
        #expect(heard.tones.isEmpty)
        #expect(Array(heard.utterances.prefix(3)) == expected)
    }
}
