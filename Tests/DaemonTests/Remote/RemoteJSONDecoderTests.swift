import CircuitState
import Foundation
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// `RemoteJSONDecoder`: Decodable types over the strict parser's tree, with beacond's messages.
@Suite struct RemoteJSONDecoderTests {
    struct Sample: Decodable, Equatable {
        var small: UInt8
        var list: [Int64]
        var nested: Nested?
        var flag: Bool

        struct Nested: Decodable, Equatable {
            var name: String
            var ratio: Double
        }
    }

    func decodeSample(_ text: String) throws -> Sample {
        try RemoteJSONDecoder.decode(Sample.self, from: RemoteJSON.parse(Array(text.utf8)))
    }

    func message(_ text: String) -> String? {
        do {
            _ = try decodeSample(text)
            return nil
        } catch let error as DecodingError {
            return error.message(whole: "the document")
        } catch {
            return "\(error)"
        }
    }

    @Test func decodesStandardShapes() throws {
        let sample = try decodeSample(
            #"{"small":255,"list":[-9223372036854775808,0,9223372036854775807],"nested":{"name":"x","ratio":-0.5},"#
                + #""flag":true,"ignored":{"deep":[1e400]}}"#)
        #expect(sample == Sample(small: 255, list: [.min, 0, .max], nested: .init(name: "x", ratio: -0.5), flag: true))
        #expect(try decodeSample(#"{"small":0,"list":[],"nested":null,"flag":false}"#).nested == nil)
    }

    @Test func errorsNameTheFieldPathAndTheExpectedType() {
        let base = #""list":[],"flag":true"#
        for (text, expected) in [
            (#"{"small":256,\#(base)}"#, #""small" must be an integer in UInt8's range (found 256)"#),
            (#"{"small":1.0,\#(base)}"#, #""small" must be an integer in UInt8's range (found 1.0)"#),
            (#"{"small":"1",\#(base)}"#, #""small" must be an integer (found a string)"#),
            (#"{"small":null,\#(base)}"#, #""small" must be an integer (found null)"#),
            (#"{"list":[],"flag":true}"#, #""small" is missing"#),
            (#"{"small":1,"list":[1,"x"],"flag":true}"#, #""list[1]" must be an integer (found a string)"#),
            (
                #"{"small":1,\#(base),"nested":{"name":"n","ratio":1e400}}"#,
                #""nested.ratio" is 1e400, beyond a Double's range"#
            ),
            (#"{"small":1,\#(base),"nested":[]}"#, #""nested" must be an object (found an array)"#),
            (#"{"small":1,"list":{},"flag":true}"#, #""list" must be an array (found an object)"#),
            (#"{"small":1,"list":[],"flag":"yes"}"#, #""flag" must be a boolean (found a string)"#),
            ("[1]", "the document must be an object (found an array)"),
        ] {
            #expect(message(text) == expected, "\(text)")
        }
    }

    /// A failed element decode does not move past the element, so another type can be tried.
    @Test func aFailedArrayElementCanBeReadAsAnotherType() throws {
        struct Mixed: Decodable {
            var values: [String] = []
            init(from decoder: any Decoder) throws {
                var elements = try decoder.unkeyedContainer()
                while !elements.isAtEnd {
                    if let number = try? elements.decode(Int.self) {
                        values.append("int \(number)")
                    } else {
                        values.append("text \(try elements.decode(String.self))")
                    }
                }
                #expect(throws: DecodingError.self) { try elements.decode(Bool.self) }
            }
        }
        let mixed = try RemoteJSONDecoder.decode(Mixed.self, from: RemoteJSON.parse(Array(#"[1,"a",2]"#.utf8)))
        #expect(mixed.values == ["int 1", "text a", "int 2"])
    }

    @Test func rawValuesAreGivenOnlyToThisDecoder() throws {
        struct Holder: Decodable { var value: RemoteJSON }
        let holder = try RemoteJSONDecoder.decode(Holder.self, from: RemoteJSON.parse(Array(#"{"value":1e999}"#.utf8)))
        #expect(holder.value == .number("1e999"))
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(Holder.self, from: Data(#"{"value":1}"#.utf8))
        }
    }

    /// Duplicate keys never reach a Decodable type: refused at the top level and nested, in each
    /// reader (the venue body is covered by `RemoteDocumentTests`), naming the key and its byte.
    @Test func duplicateKeysAreRefusedInTheStateFileAtTopLevelAndNested() throws {
        let good = String(
            decoding: RemoteStateStore.encode(
                PersistedRemoteState(snapshot: RemoteSnapshot(id: "1", globalMode: "GREEN"), fetchedWallMicros: 5)),
            as: UTF8.self)
        for (text, key) in [
            (good.replacingOccurrences(of: #""version":1"#, with: #""version":1,"version":1"#), "version"),
            (good.replacingOccurrences(of: #""id":"1""#, with: #""id":"1","id":"2""#), "id"),
        ] {
            let offset = try #require(text.utf8.firstRange(of: Array(",\"\(key)\"".utf8))?.lowerBound)
            let byte = text.utf8.distance(from: text.utf8.startIndex, to: offset) + 1
            #expect(throws: (any Error).self) { try RemoteStateStore.decode(Array(text.utf8)) }
            do {
                _ = try RemoteStateStore.decode(Array(text.utf8))
            } catch {
                #expect("\(error)".contains(#"duplicate key "\#(key)" at byte \#(byte)"#), "\(error)")
            }
        }
    }

    @Test func stateFileErrorsNameTheField() throws {
        let good = String(
            decoding: RemoteStateStore.encode(
                PersistedRemoteState(snapshot: RemoteSnapshot(globalMode: "GREEN"), fetchedWallMicros: 5)),
            as: UTF8.self)
        #expect(try RemoteStateStore.decode(Array(good.utf8)).snapshot.globalMode == "GREEN")
        for (from, to, expected) in [
            (#""version":1"#, #""version":2"#, #""version" must be 1"#),
            (#""fetched_at_us":5"#, #""fetched_at_us":0"#, #""fetched_at_us" must be a positive integer"#),
            (#""fetched_at_us":5"#, #""fetched_at_us":"5""#, #""fetched_at_us" must be an integer (found a string)"#),
            (#""fetched_at_us":5,"#, "", #""fetched_at_us" is missing"#),
            (#""latched":false"#, #""latched":"no""#, #""latched" must be a boolean (found a string)"#),
            (#""latched":false"#, #""latched":true"#, #""latched_snapshot" must be an object (found null)"#),
            (#""snapshot":{"#, #""snapshot":[7],"x":{"#, #""snapshot" must be an object (found an array)"#),
        ] {
            let text = good.replacingOccurrences(of: from, with: to)
            #expect(text != good)
            do {
                _ = try RemoteStateStore.decode(Array(text.utf8))
                Issue.record("accepted: \(text)")
            } catch {
                #expect("\(error)" == expected, "\(text)")
            }
        }
        #expect(throws: (any Error).self) { try RemoteStateStore.decode(Array("[]".utf8)) }
    }

    @Test func venueBodyShapesAndMessages() throws {
        func snapshot(_ text: String) throws -> RemoteSnapshot {
            try RemoteStateDocument.snapshot(fromBody: Data(text.utf8))
        }
        #expect(try snapshot(#"[{"mode":"RED"},7]"#).mode == "RED")
        #expect(
            try snapshot(#"{"humidity":" 40 ","temperature":"-0","id":true,"wind":{"a":1}}"#)
                == RemoteSnapshot(temperature: -0.0, humidity: 40))
        for (text, expected) in [
            ("[7]", #""[0]" must be an object (found a number)"#),
            ("7", "the document must be an object (found a number)"),
            ("null", "the document must be an object (found null)"),
        ] {
            #expect(throws: RemoteDocumentError.self) { try snapshot(text) }
            do { _ = try snapshot(text) } catch { #expect("\(error)" == expected) }
        }
    }
}

/// `--remote-timeline` lines decoded as `RemoteTimelineLine`.
@Suite struct RemoteTimelineLineTests {
    func timeline(_ text: String) throws -> RemoteTimeline {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("timeline-\(UUID()).jsonl").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return try RemoteTimeline(path: path)
    }

    func failure(_ text: String) -> String? {
        do {
            _ = try timeline(text)
            return nil
        } catch {
            // Drop the path: "<path>:<line>: reason" becomes "<line>: reason".
            let description = "\(error)"
            return description.split(separator: ":", maxSplits: 1).last.map(String.init)
        }
    }

    @Test func acceptedShapes() throws {
        let entries = try timeline(
            """
            {"ts": 2, "state": [{"global_mode": "RED"}]}
            {"ts": 1.5, "error": 503}
            {"ts": 3, "error": {"code": 1}}
            {"ts": 4, "state": []}

            """
        ).entries
        #expect(entries.map(\.time) == [1_500_000, 2_000_000, 3_000_000, 4_000_000])
        guard case .failed(let number) = entries[0].event, case .fetched(let red) = entries[1].event,
            case .failed(let object) = entries[2].event, case .fetched(let empty) = entries[3].event
        else {
            Issue.record("unexpected events \(entries.map(\.event))")
            return
        }
        #expect(number == "503")
        #expect(object.contains("code"))
        #expect(red.globalMode == "RED")
        #expect(empty == RemoteSnapshot())
    }

    @Test func duplicateKeysAtTopLevelAndNestedNameTheLine() {
        let topLevel = failure(#"{"ts": 1, "ts": 2, "error": "x"}"# + "\n")
        #expect(topLevel?.hasPrefix(#"1: duplicate key "ts" at byte 10"#) == true, "\(topLevel ?? "accepted")")
        let nested = failure("{\"ts\": 1, \"error\": \"x\"}\n" + #"{"ts": 1, "state": {"w": {"a": 1, "a": 2}}}"#)
        #expect(nested?.hasPrefix(#"2: duplicate key "a" at byte 34"#) == true, "\(nested ?? "accepted")")
    }

    @Test func fieldErrorsNameTheLineAndField() {
        for (line, expected) in [
            (#"{"ts": 1, "state": null}"#, #"1: "state" must be an object (found null)"#),
            (#"{"ts": 1, "state": [7]}"#, #"1: "state[0]" must be an object (found a number)"#),
            (#"{"error": "x"}"#, #"1: "ts" must be a number of Unix seconds"#),
            (#"{"ts": null, "error": "x"}"#, #"1: "ts" must be a number of Unix seconds"#),
            (#"{"ts": 1}"#, #"1: each line needs "state" (a fetch) or "error" (a failed fetch)"#),
            (#"[1]"#, "1: the line must be an object (found an array)"),
        ] {
            #expect(failure(line + "\n") == expected, "\(line)")
        }
    }
}
