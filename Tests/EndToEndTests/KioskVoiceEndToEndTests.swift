import BeacondTestSupport
import Foundation
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// Issue 31, the voice, with the real binary, espeak-ng, sox and aplay: `beacond kiosk --speak-to`
/// writes each announcement of a daemon's evacuation (alarm, then each language's words) and
/// repeats it; each language's espeak-ng speech is non-silent and as long as its words (sox
/// `stat`); with no sound card, `--speak` logs one line and the kiosk goes on.
@Suite(
    .enabled(if: SystemTool.available("espeak-ng"), "espeak-ng is not installed (make deps installs it)"),
    .enabled(if: SystemTool.available("sox"), "sox is not installed (make deps installs it)"))
struct KioskVoiceEndToEndTests {
    static let codes = ["es", "ca", "en", "fr", "de", "it", "pt"]
    static let catalogues = KioskCatalogueFiles.load(
        languages: codes, directories: [RepositoryPaths.root.appendingPathComponent("languages").path]
    ).catalogues

    /// A kiosk config in `languages`, repeating an evacuation every 2 s, with Puerta 3 up and right.
    static func config(_ extra: String = "", languages: [String] = ["es", "en"]) throws -> String {
        let path = BeacondProcess.temporaryFile("kiosk-voice-\(UUID().uuidString.prefix(6)).yaml")
        try """
        kiosk:
          languages: [\(languages.joined(separator: ", "))]
          speak_repeat: 2
          exit:
            direction: up_right
            name: Puerta 3 / Gate 3
            distance_m: 120
        \(extra)
        """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// sox's `stat` of a WAV: its length (s) and RMS amplitude (0–1).
    static func stat(_ file: String) throws -> (length: Double, rms: Double) {
        let result = try SystemTool.run("sox", [file, "-n", "stat"])
        func field(_ name: String) -> Double? {
            result.stderr.split(separator: "\n").first { $0.hasPrefix(name) }
                .flatMap { Double($0.split(separator: ":").last?.trimmingCharacters(in: .whitespaces) ?? "") }
        }
        return (field("Length (seconds)") ?? 0, field("RMS     amplitude") ?? 0)
    }

    @Test func speakToWritesEachAnnouncementAndRepeatsAnEvacuation() throws {
        let daemon = try DaemonProcess(["--backend", "replay", "--replay", KioskTmuxTests.evacuation, "--speed", "1"])
        #expect(daemon.waitForLog("listening on"))
        let folder = BeacondProcess.temporaryFile("kiosk-voice-out-\(UUID().uuidString.prefix(6))") + "/spoken"
        let kiosk = try WebKioskProcess([
            "kiosk", "--web", "127.0.0.1:0", "--config", try Self.config(), "--speak-to", folder,
            "--socket", daemon.socket,
        ])
        defer { kiosk.stop() }
        let first = folder + "/announcement-0001-evacuation"
        let second = folder + "/announcement-0002-evacuation"
        #expect(
            blockingWaitUntil(within: 30) { FileManager.default.fileExists(atPath: second + ".wav") },
            "\(kiosk.logText)")
        let words = try String(contentsOfFile: first + ".txt", encoding: .utf8)
        let expected = [
            "alarm: two tones, 960 and 770 Hz",
            "es: Evacuación. Abandone la zona inmediatamente. Zona 1. "
                + "Diríjase hacia Puerta 3 / Gate 3, a 120 metros. Delante, a su derecha.",
            "en: Evacuation. Leave the area now. Zone 1. Go to Puerta 3 / Gate 3, 120 metres. Ahead, on your right.",
        ]
        #expect(words == expected.joined(separator: "\n") + "\n")
        let whole = try Self.stat(first + ".wav")
        #expect(whole.length > 2.4 + 4 && whole.length < 40, "alarm and two languages: \(whole)")
        #expect(whole.rms > 0.02, "\(whole)")
        #expect(kiosk.logText == "", "\(kiosk.logText)")
        #expect(daemon.stop() != nil)
    }

    /// One real espeak-ng WAV per language: the red flag's words, non-silent, about as long as
    /// espeak-ng's 175 words a minute make them (between half and twice).
    @Test(arguments: codes)
    func eachLanguagesSpeechIsNonSilentAndAsLongAsItsWords(language: String) throws {
        let catalogue = try #require(Self.catalogues.first { $0.language == language })
        let text = catalogue.text(.sayRed)
        let directory = BeacondProcess.temporaryFile("kiosk-voice-\(language)-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try text.write(toFile: directory + "/words.txt", atomically: true, encoding: .utf8)
        let result = try SystemTool.run(
            "espeak-ng", ["-v", language, "-w", directory + "/red.wav", "-f", directory + "/words.txt"])
        #expect(result.status == 0, "\(result.stderr)")
        let sound = try Self.stat(directory + "/red.wav")
        let expected = Double(text.split(separator: " ").count) / (175.0 / 60)
        #expect(sound.length > expected / 2 && sound.length < expected * 2.5, "\(language): \(sound), \(expected) s")
        #expect(sound.rms > 0.02, "\(language): \(sound)")
    }

    /// This machine has no sound card: `--speak` logs that once, however often an evacuation is
    /// repeated, and the kiosk keeps serving its page.
    @Test(.enabled(if: SystemTool.available("aplay"), "aplay is not installed (make deps installs alsa-utils)"))
    func withoutASoundCardTheVoiceLogsOnceAndTheKioskGoesOn() throws {
        let daemon = try DaemonProcess(["--backend", "replay", "--replay", KioskTmuxTests.evacuation, "--speed", "1"])
        #expect(daemon.waitForLog("listening on"))
        let kiosk = try WebKioskProcess([
            "kiosk", "--web", "127.0.0.1:0", "--speak", "--config", try Self.config("  audio_device: nosuchcard\n"),
            "--socket", daemon.socket,
        ])
        defer { kiosk.stop() }
        let url = try #require(kiosk.waitForURL())
        #expect(
            blockingWaitUntil(within: 20) { kiosk.logText.contains("aplay exited with status") }, "\(kiosk.logText)")
        // Two repeats later, still one line.
        Thread.sleep(forTimeInterval: 4.5)
        let lines = kiosk.logText.split(separator: "\n")
        #expect(lines.count == 1, "\(lines)")
        #expect(lines.first?.hasPrefix("beacond kiosk: voice: aplay exited with status 1: ") == true, "\(lines)")
        let port = try #require(URL(string: url)?.port)
        #expect(TCPTestClient.status(port: port, path: "/healthz") == 200, "the kiosk serves on")
        #expect(daemon.stop() != nil)
    }

    /// A `--speak-to` folder that cannot be made is bad usage of the flag: exit 1 at once, saying why.
    @Test func aSpeakToFolderThatCannotBeMadeExits1() throws {
        let result = try BeacondProcess.run([
            "kiosk", "--web", "127.0.0.1:0", "--speak-to", "/proc/beacond-voice/spoken", "--socket", "/nonexistent",
        ])
        #expect(result.status == 1)
        #expect(result.stderr.hasPrefix("beacond kiosk: error: --speak-to cannot create /proc/beacond-voice/spoken"))
    }
}
