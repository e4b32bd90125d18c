import BeacondTestSupport
import CircuitState
import Foundation
import Logging
import Testing

@testable import BeacondClient
@testable import BeacondCore

@Suite struct RemoteDocumentTests {
    func parse(_ text: String) throws -> RemoteSnapshot {
        try RemoteStateDocument.snapshot(fromBody: Data(text.utf8))
    }

    func failure(_ bytes: [UInt8]) -> RemoteDocumentError? {
        do {
            _ = try RemoteStateDocument.snapshot(fromBody: Data(bytes))
            return nil
        } catch let error as RemoteDocumentError {
            return error
        } catch {
            Issue.record("unexpected error type \(error)")
            return nil
        }
    }

    @Test func modeIsGlobalModeWhenItNamesAModeElseMode() throws {
        #expect(try parse(#"{"global_mode": 5, "mode": "RED"}"#).trackMode == .redFlag)
        #expect(try parse(#"{"global_mode": 5, "mode": "RED"}"#).globalMode == nil)
        #expect(try parse(#"{"global_mode": "", "mode": "VSC"}"#).trackMode == .vsc)
        #expect(try parse(#"{"global_mode": null, "mode": "SC"}"#).trackMode == .safetyCar)
        #expect(try parse(#"{"global_mode": true, "mode": "yellow"}"#).trackMode == .yellowFlag)
        #expect(try parse(#"{"global_mode": ["EVACUATION"], "mode": "GREEN"}"#).trackMode == .normal)
        #expect(try parse(#"{"global_mode": "EVACUATION", "mode": "GREEN"}"#).trackMode == .evacuation)
        #expect(throws: RemoteDocumentError.self) { try parse(#"{"mode": 3}"#) }
        // Other text fields still take a number's literal.
        #expect(try parse(#"{"id": 7, "last_updated": 1747396810}"#).id == "7")
    }

    /// Issue 31: race control's `evacuation_route` (GeoRacing's architecture document names it), cut
    /// like `message`, carried to every client in `remote`; absent when the row has none.
    @Test func theEvacuationRouteIsReadCutAndPublished() throws {
        let route = try parse(#"{"global_mode":"EVACUATION","evacuation_route":"Salida por la puerta 3"}"#)
        #expect(route.evacuationRoute == "Salida por la puerta 3")
        #expect(try parse(#"{"EvacuationRoute":"x"}"#).evacuationRoute == "x", "spelt as race control's tools do")
        #expect(try parse(#"{"evacuation_route":7}"#).evacuationRoute == "7")
        #expect(try parse(#"{"evacuation_route":null}"#).evacuationRoute == nil)
        let long = String(repeating: "é", count: 600)
        let cut = try parse(#"{"evacuation_route":"\#(long)"}"#).evacuationRoute
        #expect(cut?.utf8.count == RemoteStateDocument.maxMessageBytes)
        var status = RemoteStatus(
            mode: .evacuation, reportedMode: .evacuation, snapshot: route, lastSuccessAt: 0, age: 0, isFresh: true,
            isLatched: false, lastFailureAt: nil, lastFailureReason: nil)
        let report = RemoteReport(status)
        #expect(report.evacuationRoute == "Salida por la puerta 3")
        var writer = JSONWriter()
        report.render(into: &writer)
        let json = String(decoding: writer.bytes, as: UTF8.self)
        #expect(json.hasSuffix(#","evacuation_route":"Salida por la puerta 3"}"#))
        let decoded = try JSONDecoder().decode(RemoteReport.self, from: Data(writer.bytes))
        #expect(decoded == report)
        // A latched evacuation keeps its own route when a later fetch has none.
        status.isLatched = true
        status.latchedSnapshot = route
        status.snapshot = RemoteSnapshot(globalMode: "GREEN")
        #expect(RemoteReport(status).evacuationRoute == "Salida por la puerta 3")
        status.isLatched = false
        let none = RemoteReport(status)
        #expect(none.evacuationRoute == nil)
        var plain = JSONWriter()
        none.render(into: &plain)
        #expect(!String(decoding: plain.bytes, as: UTF8.self).contains("evacuation_route"))
    }

    @Test func anOutOfRangeNumberInAnUnusedFieldKeepsTheDocument() throws {
        let snapshot = try parse(#"{"global_mode":"RED_FLAG","temperature":1e400,"humidity":-1e400,"wind":1e999}"#)
        #expect(snapshot.trackMode == .redFlag)
        #expect(snapshot.temperature == nil)
        #expect(snapshot.humidity == nil)
        #expect(snapshot.wind == "1e999")
        #expect(try parse(#"{"temperature":"1e400","humidity":"nan"}"#) == RemoteSnapshot())
        #expect(try parse(#"{"temperature":-0}"#).temperature?.sign == .minus)
        let extremes = try parse(#"{"temperature":4.9e-324,"humidity":1.7976931348623157e308}"#)
        #expect(extremes.humidity == .greatestFiniteMagnitude)
        let huge = String(repeating: "9", count: 5000)
        let hugeID = try parse(#"{"id":\#(huge),"global_mode":"GREEN","temperature":\#(huge)}"#)
        #expect(hugeID.id == String(repeating: "9", count: RemoteStateDocument.maxFieldBytes))
        #expect(hugeID.temperature == nil)
        #expect(hugeID.trackMode == .normal)
        #expect(
            try parse(#"{"unused":{"deep":[1e400,-1e400,123456789012345678901234567890]},"mode":"RED"}"#)
                .trackMode == .redFlag)
    }

    @Test func duplicateKeysAtAnyDepthAreAnAmbiguousDocument() throws {
        for (body, key, offset) in [
            (#"{"global_mode":"GREEN","global_mode":"EVACUATION"}"#, "global_mode", 23),
            (#"{"mode":"RED","x":{"a":1,"b":{"c":[{"d":1,"d":2}]}}}"#, "d", 42),
            (#"[{"id":1},{"id":1,"id":2}]"#, "id", 18),
            (#"{"a\u0062":1,"ab":2}"#, "ab", 13),
        ] {
            let error = try #require(failure(Array(body.utf8)), "\(body)")
            #expect(!error.isNotJSON, "\(body)")
            #expect(error.reason.contains("duplicate key \"\(key)\" at byte \(offset)"), "\(error.reason)")
            #expect(RemoteFailure.classify(error, timeout: .seconds(1)).kind == .invalidDocument)
        }
        // The same key in sibling objects is not a duplicate.
        #expect(try parse(#"{"a":{"k":1},"b":{"k":2},"mode":"RED"}"#).trackMode == .redFlag)
    }

    @Test func syntaxErrorsNameTheirByteOffset() throws {
        let cases: [([UInt8], String)] = [
            (Array(#"{"mode":"RED",}"#.utf8), "unexpected \"}\" at byte 14"),
            (Array(#"{"mode":"RED"} x"#.utf8), "content after the JSON value at byte 15"),
            (Array(#"{"mode":"RE"#.utf8), "unexpected end of input at byte 11"),
            (Array(#"{"t":01}"#.utf8), "unexpected \"1\" at byte 6"),
            (Array(#"{"t":1.}"#.utf8), "invalid number at byte 5"),
            (Array(#"{"t":-}"#.utf8), "invalid number at byte 5"),
            (Array(#"{"m":"\x"}"#.utf8), "invalid escape in a string at byte 6"),
            (Array(#"{"m":"\u12"}"#.utf8), "invalid escape in a string at byte 6"),
            (Array("{\"m\":\"a\nb\"}".utf8), "unescaped control character in a string at byte 7"),
            (Array(#"{"m":"ok"}"#.utf8).prefix(6) + [0xC3, 0x28] + Array(#""}"#.utf8), "invalid UTF-8 at byte 6"),
            ([0xFE, 0xFF, 0x00, 0x7B, 0x00, 0x7D], "invalid UTF-8 at byte 0"),
            ([0xEF, 0xBB, 0xBF, 0xEF, 0xBB, 0xBF, 0x7B, 0x7D], "unexpected byte 0xef at byte 3"),
            (Array("".utf8), "unexpected end of input at byte 0"),
            (Array("nul".utf8), "unexpected end of input at byte 3"),
        ]
        for (body, expected) in cases {
            let error = try #require(failure(body), "\(body)")
            #expect(error.isNotJSON, "\(body)")
            #expect(error.reason.contains(expected), "\(error.reason) vs \(expected)")
        }
    }

    @Test func extremeBodiesNeverTrap() throws {
        // A leading byte order mark is skipped.
        #expect(
            try RemoteStateDocument.snapshot(fromBody: Data([0xEF, 0xBB, 0xBF] + Array(#"{"mode":"RED"}"#.utf8)))
                .trackMode == .redFlag)
        // Nesting: at most RemoteJSON.maxDepth levels, and 100,000 levels are refused without recursion.
        let levels = RemoteJSON.maxDepth - 1
        let allowed = String(repeating: "[", count: levels) + String(repeating: "]", count: levels)
        #expect(try parse(#"{"x":\#(allowed),"mode":"RED"}"#).trackMode == .redFlag)
        let tooDeep = #"{"x":\#(allowed.dropLast(levels))[]\#(allowed.dropFirst(levels))}"#
        let deepError = try #require(failure(Array(tooDeep.utf8)))
        #expect(deepError.reason.contains("nested deeper than \(RemoteJSON.maxDepth) levels"))
        #expect(!deepError.isNotJSON)
        #expect(failure(Array(String(repeating: "[", count: 100_000).utf8)) != nil)
        #expect(failure(Array(String(repeating: #"{"a":"#, count: 100_000).utf8)) != nil)
        // Surrogates: a pair is one scalar, a lone one becomes U+FFFD.
        #expect(try parse(#"{"message":"\ud83d\ude00 \ud800 \udc00x"}"#).message == "😀 \u{FFFD} \u{FFFD}x")
        #expect(try parse(#"{"message":"a\u0000b\/c"}"#).message == "a\u{0}b/c")
        // Top-level shapes.
        for body in ["7", "\"text\"", "null", "true", "[7]", "[[]]"] {
            #expect(failure(Array(body.utf8))?.isNotJSON == false, "\(body)")
        }
        #expect(try parse("[]") == RemoteSnapshot())
        #expect(try parse(" \r\n\t{}\n ") == RemoteSnapshot())
    }

    /// Random mutations of a real document: every outcome is a snapshot or a `RemoteDocumentError`.
    @Test func mutatedDocumentsParseOrFailCleanly() throws {
        let seed = Array(
            (#"{"id":7,"global_mode":"RED_FLAG","mode":"GREEN","message":"D\u00e9bris \"3\"","#
                + #""temperature":21.5,"humidity":"40","wind":[1,{"a":null}],"last_updated":true}"#).utf8)
        var generator = SplitMix64(seed: 0x9E37_79B9_7F4A_7C15)
        let interesting: [UInt8] = [
            0x00, 0x22, 0x5C, 0x7B, 0x7D, 0x5B, 0x5D, 0x2C, 0x3A, 0x80, 0xC3, 0xF0, 0xFF,
            0x65, 0x2D,
        ]
        var parsed = 0
        for _ in 0..<3000 {
            var body = seed
            for _ in 0..<Int(generator.next() % 4 + 1) {
                let index = Int(generator.next() % UInt64(body.count))
                switch generator.next() % 4 {
                case 0: body[index] = interesting[Int(generator.next() % UInt64(interesting.count))]
                case 1: body.remove(at: index)
                case 2: body.insert(interesting[Int(generator.next() % UInt64(interesting.count))], at: index)
                default: body = Array(body.prefix(index))
                }
                if body.isEmpty { break }
            }
            do {
                _ = try RemoteStateDocument.snapshot(fromBody: Data(body))
                parsed += 1
            } catch {
                #expect(error is RemoteDocumentError)
            }
        }
        #expect(parsed > 10) // some mutations (inside strings) stay valid
    }

    @Test func textFieldsAreCutAtAUTF8Boundary() throws {
        let emoji = String(repeating: "😀", count: 400) // 1600 bytes
        let snapshot = try parse(#"{"message":"\#(emoji)","wind":"\#(String(repeating: "é", count: 100))"}"#)
        #expect(snapshot.message == String(repeating: "😀", count: RemoteStateDocument.maxMessageBytes / 4))
        #expect(snapshot.wind == String(repeating: "é", count: RemoteStateDocument.maxFieldBytes / 2))
        #expect(RemoteStateDocument.truncated("aé", toUTF8Bytes: 2) == "a")
        #expect(RemoteStateDocument.truncated("a😀", toUTF8Bytes: 4) == "a")
        #expect(RemoteStateDocument.truncated("a😀", toUTF8Bytes: 5) == "a😀")
        #expect(RemoteStateDocument.truncated("abc", toUTF8Bytes: 0) == "")
    }

    @Test func contentLengthIsDigitsOnly() throws {
        #expect(try RemoteFetcher.contentLength("65536") == 65536)
        #expect(try RemoteFetcher.contentLength("0") == 0)
        #expect(try RemoteFetcher.contentLength(String(repeating: "9", count: 40)) == .max)
        for bad in ["", "-1", "+5", " 5", "5 ", "0x10", "1e3", "٣"] {
            #expect(throws: RemoteFailure.self, "\(bad)") { try RemoteFetcher.contentLength(bad) }
        }
    }
}

/// A small deterministic generator, so a failing mutation can be reproduced.
@Suite struct RemotePollerDocumentTests {
    /// Duplicate keys are a failed fetch (the last good state stays), logged once while they last.
    @Test func duplicateKeysFailTheFetchAndAreLoggedOnce() async throws {
        let directory = try RemoteTestTools.temporaryDirectory()
        let path = directory + "/state.json"
        try #"{"global_mode":"GREEN"}"#.write(toFile: path, atomically: true, encoding: .utf8)
        let (logger, logs) = CapturingLogHandler.logger()
        let sink = RecordingRemoteSink()
        let poller = try RemoteStatePoller(
            configuration: RemotePollerConfiguration(
                url: "file://" + path, pollInterval: .seconds(60),
                staleAfter: .seconds(3)),
            sink: sink, logger: logger, random: { 0.5 })
        #expect(try await poller.pollOnce() <= .seconds(60))
        let duplicated = #"{"global_mode":"GREEN","global_mode":"EVACUATION"}"#
        try duplicated.write(toFile: path, atomically: true, encoding: .utf8)
        var delays: [Duration] = []
        for _ in 0..<4 { delays.append(try await poller.pollOnce()) }
        #expect(
            sink.events == [.fetched(RemoteSnapshot(globalMode: "GREEN"))]
                + Array(repeating: .failed(.invalidDocument), count: 4))
        let warnings = logs.at(.warning)
        #expect(warnings.count == 1)
        #expect(warnings.first?.message.contains(#"duplicate key "global_mode" at byte 23"#) == true)
        // A 60 s interval with stale_after 3 s: retries come at most 1 s apart.
        #expect(delays.allSatisfy { $0 <= .seconds(1) && $0 > .zero })
        #expect(poller.counters.failures == [.invalidDocument: 4])

        // 64 KiB + 1 is too large; 64 KiB exactly is read.
        let exact = #"{"mode":"RED"}"# + String(repeating: " ", count: RemotePollerConfiguration.maxBodyBytes - 14)
        try exact.write(toFile: path, atomically: true, encoding: .utf8)
        _ = try await poller.pollOnce()
        #expect(sink.events.last == .fetched(RemoteSnapshot(mode: "RED")))
        try (exact + " ").write(toFile: path, atomically: true, encoding: .utf8)
        _ = try await poller.pollOnce()
        #expect(sink.events.last == .failed(.tooLarge))
    }
}

/// A `--remote-timeline` line holds a venue API document: the same strictness applies.
@Suite struct RemoteTimelineDocumentTests {
    @Test func aLineWithDuplicateKeysIsAnErrorNamingFileAndLine() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("timeline-\(UUID()).jsonl").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try """
        {"ts": 1778932805.0, "state": {"global_mode": "RED"}}
        {"ts": 1778932806.0, "state": {"global_mode": "GREEN", "global_mode": "RED"}}

        """.write(toFile: path, atomically: true, encoding: .utf8)
        do {
            _ = try RemoteTimeline(path: path)
            Issue.record("a timeline with a duplicate key was accepted")
        } catch {
            #expect("\(error)".hasPrefix("\(path):2: "))
            #expect("\(error)".contains("duplicate key \"global_mode\""))
        }
    }

    /// A FIFO (or a device) named as the timeline is refused at once, never read until it ends.
    @Test func aFIFOIsRefusedWithoutBlocking() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("timeline-\(UUID()).fifo").path
        #expect(mkfifo(path, 0o600) == 0)
        defer { try? FileManager.default.removeItem(atPath: path) }
        do {
            _ = try RemoteTimeline(path: path)
            Issue.record("a FIFO was accepted as a remote timeline")
        } catch {
            #expect("\(error)" == "\(path):0: is a FIFO, not a regular file")
        }
    }

    @Test func aLineWithAnInfiniteTimeOrBadSyntaxNamesItsLine() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("timeline-\(UUID()).jsonl").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        for (line, reason) in [
            (#"{"ts": 1e400, "error": "x"}"#, #""ts" is 1e400"#),
            (#"{"ts": 5, "error": "x",}"#, "not valid JSON: unexpected \"}\" at byte 23"),
        ] {
            try "\(line)\n".write(toFile: path, atomically: true, encoding: .utf8)
            do {
                _ = try RemoteTimeline(path: path)
                Issue.record("\(line) was accepted")
            } catch {
                #expect("\(error)".hasPrefix("\(path):1: "))
                #expect("\(error)".contains(reason), "\(error)")
            }
        }
    }
}
