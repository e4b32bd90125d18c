import BLEPayload
import BeacondTestSupport
import CircuitState
import Foundation
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// Issue 25, class 1 (safety): race control's evacuation, in every spelling a hand, a tool or a
/// forger can give it, is never published as anything less while a beacon says normal.
@Suite struct RemoteModeVariantTests {
    static let evacuationNames = [
        "EVACUATION", "evacuate", "Evacuation_Mode", "EVACUATION_REQUIRED", "evacuación", "EVACUATON", "Evakuierung",
    ]

    /// Ways to spell one name that a reader still recognises.
    static func spellings(of name: String) -> [String] {
        let scalars = Array(name.unicodeScalars)
        var result = [name, name.lowercased(), name.uppercased(), name.capitalized]
        for padding in [" ", "  ", "\t", "\n", "\r\n", "\u{00A0}", "\u{3000}", "\u{2003}"] {
            result += [padding + name, name + padding, padding + name + padding]
        }
        let invisibles: [Unicode.Scalar] = [
            "\u{200B}", "\u{200C}", "\u{200D}", "\u{200E}", "\u{200F}", "\u{061C}", "\u{FEFF}", "\u{00AD}",
            "\u{2060}", "\u{180E}", "\u{034F}",
        ]
        for invisible in invisibles {
            for position in [0, 1, scalars.count / 2, scalars.count] {
                var changed = scalars
                changed.insert(invisible, at: position)
                result.append(String(String.UnicodeScalarView(changed)))
            }
        }
        // Each letter in turn swapped for each look-alike this test knows of.
        let lookAlikes: [Unicode.Scalar: [Unicode.Scalar]] = [
            "E": ["\u{0415}", "\u{0395}", "\u{FF25}", "\u{1D404}", "\u{00C9}"],
            "e": ["\u{0435}", "\u{FF45}", "\u{00E9}"],
            "A": ["\u{0410}", "\u{0391}", "\u{FF21}", "\u{212B}"], "a": ["\u{0430}", "\u{03B1}"],
            "C": ["\u{0421}", "\u{FF23}", "\u{216D}"], "c": ["\u{0441}"],
            "O": ["\u{041E}", "\u{039F}", "\u{FF2F}"], "o": ["\u{043E}", "\u{03BF}"],
            "I": ["\u{0406}", "\u{0399}", "\u{2160}", "\u{0130}"], "i": ["\u{0456}", "\u{0131}", "\u{03B9}"],
            "T": ["\u{0422}", "\u{03A4}"], "N": ["\u{039D}", "\u{FF2E}"], "M": ["\u{041C}", "\u{039C}"],
            "V": ["\u{2164}", "\u{FF36}"], "U": ["\u{FF35}"], "u": ["\u{03C5}"],
        ]
        for (index, scalar) in scalars.enumerated() {
            for replacement in lookAlikes[scalar] ?? [] {
                var changed = scalars
                changed[index] = replacement
                result.append(String(String.UnicodeScalarView(changed)))
            }
        }
        return result
    }

    static let keySpellings = [
        "global_mode", "GLOBAL_MODE", "Global_Mode", "globalMode", " global_mode", "global-mode",
    ]

    static func json(_ text: String) -> String {
        var writer = JSONWriter()
        writer.string(text)
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    /// Documents naming an evacuation: in `global_mode` (any key spelling) over a green `mode`, in `mode`
    /// under a `global_mode` that names nothing known or is not a string, and as an array's first row.
    static func documents() -> [String] {
        var documents: [String] = []
        for name in evacuationNames {
            for spelling in spellings(of: name) {
                let value = json(spelling)
                for key in keySpellings {
                    documents.append(#"{\#(json(key)): \#(value), "mode": "GREEN"}"#)
                }
                documents.append(#"{"global_mode": "PURPLE", "mode": \#(value)}"#)
                documents.append(#"{"global_mode": 5, "MODE": \#(value)}"#)
                documents.append(#"{"global_mode": "", "mode": \#(value)}"#)
                documents.append(#"[{"Global_Mode": \#(value), "mode": "NORMAL"}]"#)
            }
        }
        return documents
    }

    @Test func anEvacuationInAnyRecognisableFormIsNeverPublishedAsLess() throws {
        let documents = Self.documents()
        #expect(documents.count > 2000)
        var failures: [String] = []
        for document in documents {
            var engine = FusionEngine()
            let beacon = BluetoothAddress(rawValue: 0xC0_00_00_00_00_01)
            engine.ingest(
                .circuit(zone: 1, mode: .normal, sequence: 1, ttl: 60, temperature: nil), address: beacon, rssi: -60,
                at: 0)
            #expect(engine.evaluate(at: 0).mode == .normal)
            do {
                let snapshot = try RemoteStateDocument.snapshot(fromBody: Data(document.utf8))
                engine.remoteFetched(snapshot, at: 1_000)
                let published = engine.evaluate(at: 2_000)
                if published.mode != .evacuation { failures.append("\(document) → \(published.decision.modeName)") }
            } catch {
                failures.append("\(document) → refused: \(error)")
            }
        }
        #expect(failures.isEmpty, "\(failures.count) of \(documents.count): \(failures.prefix(10))")
    }

    /// A name that names nothing known is a failed fetch of its own kind, naming what was held with
    /// invisible and look-alike letters escaped; never a successful fetch of no mode.
    @Test(arguments: [
        (#"{"global_mode": "PURPLE"}"#, #"unknown mode: "global_mode": "PURPLE""#),
        (#"{"global_mode": "EMERGENCY", "mode": "DANGER"}"#, #""global_mode": "EMERGENCY", "mode": "DANGER""#),
        (#"{"mode": 3}"#, #"unknown mode: "mode": a number (3)"#),
        (#"{"global_mode": true}"#, #"unknown mode: "global_mode": a boolean"#),
        (#"{"global_mode": "  "}"#, #"unknown mode: "global_mode": "  ""#),
        (#"{"global_mode": "E\u0416ACUATION"}"#, #""global_mode": "E\u{416}ACUATION""#),
        (#"[{"GLOBAL_MODE": "\"quoted\\"}]"#, #""global_mode": "\u{22}quoted\u{5c}""#),
    ])
    func aNameThatNamesNothingKnownFailsTheFetch(body: String, reason: String) throws {
        do {
            let snapshot = try RemoteStateDocument.snapshot(fromBody: Data(body.utf8))
            Issue.record("\(body) was a successful fetch: \(snapshot)")
        } catch let error as RemoteDocumentError {
            #expect(error.isUnknownMode)
            #expect(error.reason.contains(reason), "\(error.reason)")
            let failure = RemoteFailure.classify(error, timeout: .seconds(1))
            #expect(failure.kind == .unknownMode)
            #expect(failure.kind.rawValue == "unknown_mode")
        }
    }

    /// No mode at all (no row, or mode fields missing, null or empty) is still a fetch of no mode.
    @Test(arguments: ["{}", "[]", #"{"id": 1}"#, #"{"global_mode": null, "mode": ""}"#])
    func noModeAtAllIsAFetchOfNoMode(body: String) throws {
        #expect(try RemoteStateDocument.snapshot(fromBody: Data(body.utf8)).trackMode == nil)
    }

    @Test func twoKeysThatReadAsOneFieldAreAmbiguous() throws {
        for body in [
            #"{"global_mode": "GREEN", "GLOBAL_MODE": "EVACUATION"}"#, #"{"mode": "RED", " Mode": "GREEN"}"#,
            #"{"message": "a", "Message": "b", "mode": "RED"}"#,
        ] {
            do {
                _ = try RemoteStateDocument.snapshot(fromBody: Data(body.utf8))
                Issue.record("\(body) was accepted")
            } catch let error as RemoteDocumentError {
                #expect(!error.isUnknownMode && !error.isNotJSON)
                #expect(error.reason.contains("both name"), "\(error.reason)")
                #expect(RemoteFailure.classify(error, timeout: .seconds(1)).kind == .invalidDocument)
            }
        }
    }

    /// A `--remote-timeline` state naming nothing known is a failed fetch there too.
    @Test func aTimelineStateNamingNothingKnownIsAFailedFetch() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/timeline.jsonl"
        try """
        {"ts": 100, "state": {"global_mode": "Evacuation "}}
        {"ts": 101, "state": {"global_mode": "PURPLE"}}

        """.write(toFile: path, atomically: true, encoding: .utf8)
        let timeline = try RemoteTimeline(path: path)
        guard timeline.entries.count == 2 else {
            Issue.record("entries: \(timeline.entries.count)")
            return
        }
        if case .fetched(let snapshot) = timeline.entries[0].event {
            #expect(snapshot.trackMode == .evacuation)
        } else {
            Issue.record("line 1: \(timeline.entries[0].event)")
        }
        if case .failed(let reason) = timeline.entries[1].event {
            #expect(reason == #"unknown mode: "global_mode": "PURPLE""#)
        } else {
            Issue.record("line 2: \(timeline.entries[1].event)")
        }
    }
}
