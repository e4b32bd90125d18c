import BeacondTestSupport
import Foundation
import Glibc
import Synchronization
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// Issue 31, part 3: what the voice says (from the catalogues), the alarm and the WAV files, and
/// the speaker with the real espeak-ng: written to a folder, cut off by a newer announcement,
/// repeated during an evacuation, and a missing program logged once.
@Suite struct KioskVoiceTests {
    static let gate = KioskEvacuationViewTests.gate

    static func link(_ mode: String, zone: Int? = 7, name: String? = "Main grandstand") -> KioskView.Link {
        var state = KioskSamples.state(mode: mode, zone: zone)
        state.zoneName = name
        return .connected(state)
    }

    /// The words for each flag and language are the catalogue's `say_*` lines.
    @Test func theWordsComeFromTheCatalogues() throws {
        let catalogues = KioskCatalogueTests.loaded()
        for flag in KioskView.Flag.allCases {
            let link = flag.mode.map { Self.link($0) } ?? .unreachable(since: 0, reason: "gone")
            let announcement = KioskAnnouncement(link: link, catalogues: catalogues, exit: Self.gate)
            #expect(announcement.flag == flag && announcement.alarm == (flag == .evacuation))
            #expect(announcement.spoken.map(\.language) == KioskCatalogueTests.codes)
            for (catalogue, spoken) in zip(catalogues, announcement.spoken) {
                var expected = [catalogue.text(KioskAnnouncement.phrase(flag))]
                if flag != .noSignal {
                    expected.append(catalogue.text(.sayZoneNamed, ["zone": "7", "name": "Main grandstand"]) + ".")
                }
                if flag == .evacuation {
                    expected.append(catalogue.text(.sayExitDistance, ["name": "Puerta 3 / Gate 3", "distance": "120"]))
                    expected.append(catalogue.text(.sayUpRight))
                }
                #expect(spoken.text == expected.joined(separator: " "), "\(catalogue.language) \(flag)")
            }
        }
        let spanish = try #require(catalogues.first)
        let stewards = KioskAnnouncement(link: Self.link("evacuation", zone: nil), catalogues: [spanish], exit: .init())
        #expect(
            stewards.spoken[0].text
                == "Evacuación. Abandone la zona inmediatamente. Siga las indicaciones del personal del circuito.")
    }

    /// The voice speaks at a change of flag, and during an evacuation when its words change; the
    /// NO SIGNAL a kiosk starts with is not announced.
    @Test func theVoiceSpeaksAtChangesOfFlag() throws {
        let folder = try TemporaryDirectory(prefix: "kiosk-voice")
        let speaker = try KioskSpeaker(
            configuration: .init(output: .directory(folder.path), repeatEvery: 3_600_000_000), log: { _ in })
        let recorder = AnnouncementRecorder()
        let voice = KioskVoice(speaker: speaker, presentation: KioskPresentation(exit: Self.gate)) {
            recorder.add($0)
        }
        voice.follow(.unreachable(since: 0, reason: "connecting"))
        voice.follow(Self.link("normal"))
        voice.follow(Self.link("normal", zone: 3))
        voice.follow(Self.link("evacuation"))
        voice.follow(Self.link("evacuation"))
        voice.follow(Self.link("evacuation", zone: 9))
        voice.follow(.unreachable(since: 0, reason: "gone"))
        #expect(recorder.flags == [.green, .evacuation, .evacuation, .noSignal])
        #expect(access(speaker.scratch, F_OK) == 0)
        speaker.stop()
        #expect(access(speaker.scratch, F_OK) != 0, "a speaker never started removes its scratch folder at stop")
    }

    @Test func theAlarmIsTwoTonesAndAWAVRoundTrips() throws {
        let alarm = PCMAudio.alarm(sampleRate: 22_050)
        #expect(abs(alarm.duration - 2.4) < 0.01)
        // Zero crossings per tone: 2 × frequency × duration.
        let tone = 22_050 * 400 / 1000
        for (index, frequency) in [960.0, 770.0].enumerated() {
            let part = alarm.samples[(index * tone + 500)..<((index + 1) * tone - 500)]
            let crossings = zip(part, part.dropFirst()).filter { ($0 < 0) != ($1 < 0) }.count
            let measured = Double(crossings) / 2 / (Double(part.count) / 22_050)
            #expect(abs(measured - frequency) < 15, "\(frequency) Hz measured \(measured)")
        }
        #expect(alarm.samples.max() ?? 0 <= 16_000 && alarm.samples.first == 0, "ramped, half scale")
        let back = try PCMAudio(wav: alarm.wav())
        #expect(back == alarm)
        #expect(throws: PCMAudio.FormatError.notWAV) { try PCMAudio(wav: Array("RIFX....WAVE".utf8)) }
        var stereo = alarm.wav()
        stereo[22] = 2
        #expect(throws: PCMAudio.FormatError.unsupported("2 channels")) { try PCMAudio(wav: stereo) }
        #expect(throws: PCMAudio.FormatError.truncated(offset: 20)) { try PCMAudio(wav: Array(alarm.wav().prefix(30))) }
        var mixed = PCMAudio.silence(milliseconds: 100, sampleRate: 22_050)
        mixed.append(PCMAudio.silence(milliseconds: 100, sampleRate: 44_100))
        #expect(mixed.samples.count == 4_410, "resampled to the first's rate")
    }

    /// Without espeak-ng an evacuation still sounds its alarm, and the missing program is one
    /// log line however often it is needed.
    @Test func aMissingProgramIsOneLogLineAndTheAlarmStillSounds() throws {
        let folder = try TemporaryDirectory(prefix: "kiosk-voice")
        let lines = LogLines()
        var configuration = KioskSpeaker.Configuration(output: .directory(folder.path), repeatEvery: 3_600_000_000)
        configuration.espeak = "/nonexistent/espeak-ng"
        let speaker = try KioskSpeaker(configuration: configuration) { lines.add($0) }
        try speaker.start()
        defer {
            speaker.stop()
            #expect(access(speaker.scratch, F_OK) != 0, "the thread removed its scratch folder before stop returned")
        }
        let catalogues = KioskCatalogueTests.loaded()
        speaker.announce(KioskAnnouncement(link: Self.link("evacuation"), catalogues: catalogues, exit: Self.gate))
        #expect(blockingWaitUntil(within: 10) { speaker.finished == 1 })
        #expect(access(speaker.scratch + "/words-0.txt", F_OK) == 0, "the words went through the scratch folder")
        let wav = try PCMAudio(
            wav: Array(try Data(contentsOf: URL(fileURLWithPath: folder.path + "/announcement-0001-evacuation.wav"))))
        #expect(abs(wav.duration - 2.4) < 0.01, "the alarm alone")
        #expect(
            lines.all.count == 1 && lines.all[0].contains("/nonexistent/espeak-ng is not installed"), "\(lines.all)")
    }

    /// The real espeak-ng: each language's words as non-silent speech after the alarm; a newer
    /// announcement cuts off the one being rendered; an evacuation repeats.
    @Test(.enabled(if: SystemToolPaths.available("espeak-ng"), "espeak-ng is not installed (make deps installs it)"))
    func espeakSpeaksEachLanguageACutOffDropsTheOldAndAnEvacuationRepeats() throws {
        let folder = try TemporaryDirectory(prefix: "kiosk-voice")
        let lines = LogLines()
        let speaker = try KioskSpeaker(
            configuration: .init(output: .directory(folder.path), repeatEvery: 2_000_000)
        ) { lines.add($0) }
        try speaker.start()
        defer { speaker.stop() }
        let catalogues = Array(KioskCatalogueTests.loaded().prefix(3))
        speaker.announce(KioskAnnouncement(link: Self.link("red_flag"), catalogues: catalogues, exit: Self.gate))
        speaker.announce(KioskAnnouncement(link: Self.link("evacuation"), catalogues: catalogues, exit: Self.gate))
        #expect(blockingWaitUntil(within: 20) { speaker.finished >= 2 }, "\(lines.all)")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        #expect(
            files.prefix(4) == [
                "announcement-0001-evacuation.txt", "announcement-0001-evacuation.wav",
                "announcement-0002-evacuation.txt", "announcement-0002-evacuation.wav",
            ], "the red flag was cut off before it was written; the evacuation repeated")
        let words = try String(contentsOfFile: folder.path + "/announcement-0001-evacuation.txt", encoding: .utf8)
        let announcement = KioskAnnouncement(link: Self.link("evacuation"), catalogues: catalogues, exit: Self.gate)
        #expect(
            words == (["alarm: two tones, 960 and 770 Hz"] + announcement.spoken.map { "\($0.language): \($0.text)" })
                .joined(separator: "\n") + "\n")
        let wav = try PCMAudio(
            wav: Array(try Data(contentsOf: URL(fileURLWithPath: folder.path + "/announcement-0001-evacuation.wav"))))
        #expect(wav.duration > 2.4 + 3 * 2, "the alarm and three languages' speech: \(wav.duration) s")
        let speech = wav.samples.dropFirst(Int(2.7 * Double(wav.sampleRate)))
        let loud = speech.filter { abs(Int($0)) > 1_000 }.count
        #expect(Double(loud) / Double(speech.count) > 0.1, "speech, not silence")
        #expect(lines.all.isEmpty, "\(lines.all)")
    }
}

/// Log lines from another thread.
final class LogLines: Sendable {
    private let lines = Mutex<[String]>([])
    func add(_ line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.withLock { $0 } }
}

/// Announcements the voice decided on.
final class AnnouncementRecorder: Sendable {
    private let recorded = Mutex<[KioskAnnouncement]>([])
    func add(_ announcement: KioskAnnouncement) { recorded.withLock { $0.append(announcement) } }
    var flags: [KioskView.Flag] { recorded.withLock { $0.map(\.flag) } }
}

enum SystemToolPaths {
    static func available(_ name: String) -> Bool {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").contains { FileManager.default.isExecutableFile(atPath: "\($0)/\(name)") }
    }
}
