import BeacondTestSupport
import Foundation
import NIOCore
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// Extreme and garbage request lines: each gets one clear answer, nothing traps, and the
/// connection stays in step (docs/protocol.md, "error").
@Suite(.serialized) struct SocketRequestFuzzTests {
    static let nesting = String(repeating: "[", count: 2000) + String(repeating: "]", count: 2000)
    static let bigInteger = String(repeating: "9", count: 400)

    /// Lines and the exact answer each gets: an error text, or the reply type of a valid command.
    static let cases: [(line: [UInt8], answer: String)] = [
        (Array(#"{"cmd":"subscribe","beacons":1e400}"#.utf8), #"error: "beacons" must be true or false"#),
        (Array(#"{"cmd":"subscribe","beacons":-0}"#.utf8), #"error: "beacons" must be true or false"#),
        (Array("{\"cmd\":\"subscribe\",\"beacons\":\(bigInteger)}".utf8), #"error: "beacons" must be true or false"#),
        (Array(#"{"cmd":1e400}"#.utf8), #"error: "cmd" must be a string"#),
        (Array(#"{"cmd":-0}"#.utf8), #"error: "cmd" must be a string"#),
        (Array("{\"cmd\":-\(bigInteger)}".utf8), #"error: "cmd" must be a string"#),
        (Array("1e400".utf8), "error: expected a JSON object"),
        (Array("-0".utf8), "error: expected a JSON object"),
        (Array(bigInteger.utf8), "error: expected a JSON object"),
        // Unknown fields are ignored, whatever number they hold.
        (Array(#"{"cmd":"ping","n":1e400,"m":-0}"#.utf8), "pong"),
        (Array("{\"cmd\":\"ping\",\"n\":\(bigInteger)}".utf8), "pong"),
        (Array("{\"cmd\":\"ping\",\"deep\":\(nesting)}".utf8), "error: invalid JSON"),
        (Array(nesting.utf8), "error: invalid JSON"),
        (Array(#"{"cmd":"pi"#.utf8) + [0x00] + Array(#"ng"}"#.utf8), "error: control character 0x00 at byte 10"),
        ([0x00], "error: control character 0x00 at byte 0"),
        (Array(#"{"cmd":"ping"}"#.utf8) + [0x1B], "error: control character 0x1B at byte 14"),
        (
            Array(#"{"cmd":"ping"#.utf8) + [0xC0, 0x80] + Array(#""}"#.utf8),
            "error: line is not valid UTF-8 (at byte 12)"
        ),
        (Array("{\"cmd\":\"é".utf8) + [0xED, 0xA0, 0x80], "error: line is not valid UTF-8 (at byte 10)"),
        ([0xF4, 0x90, 0x80, 0x80], "error: line is not valid UTF-8 (at byte 0)"),
        // A lone surrogate escape reads as U+FFFD, as in race control's documents.
        (
            Array(#"{"cmd":"\ud800"}"#.utf8),
            "error: unknown command \"\u{FFFD}\" (expected status, subscribe, ping or history)"
        ),
        // A repeated key is ambiguous: refused, naming it (issue 25, class 7).
        (Array(#"{"cmd":"status","cmd":"ping"}"#.utf8), #"error: duplicate key "cmd" at byte 16"#),
        (
            Array(#"{"cmd":"subscribe","beacons":false,"beacons":true}"#.utf8),
            #"error: duplicate key "beacons" at byte 35"#
        ),
        (Array(#"{"cmd":"ping","x":{"a":1,"a":2}}"#.utf8), #"error: duplicate key "a" at byte 25"#),
        (
            Array(#"{"cmd":"st\u0000atus"}"#.utf8),
            "error: unknown command \"st\u{0}atus\" (expected status, subscribe, ping or history)"
        ),
        (Array(repeating: UInt8(ascii: "x"), count: 4097), "error: line too long (over 4096 bytes)"),
        (Array(repeating: UInt8(ascii: "{"), count: 70_000), "error: line too long (over 4096 bytes)"),
        (Array("{\"cmd\":\"ping\",\"pad\":\"\(String(repeating: "a", count: 4070))\"}".utf8), "pong"),
        (Array(#"{"cmd":"ping"}"#.utf8), "pong"),
    ]

    @Test func extremeLinesGetOneClearAnswerEach() throws {
        var limits = ClientLimits()
        limits.maxErrors = 10_000
        let harness = try SocketHarness(limits: limits)
        defer { harness.close() }
        let client = try harness.greetedClient()

        for (index, item) in Self.cases.enumerated() {
            try client.send(bytes: item.line + [0x0A])
            let message = try client.readMessage()
            let answer = message.type == "error" ? "error: " + (message["error"] as? String ?? "?") : message.type
            #expect(answer == item.answer, "case \(index)")
        }
        #expect(try client.request(#"{"cmd":"ping"}"#, reply: "pong").type == "pong")
        let expectedErrors = Self.cases.filter { $0.answer.hasPrefix("error: ") }.count
        #expect(try harness.counters().errors == expectedErrors)
    }

    /// Random lines (seeded): parsing never traps, and every invalid line is explained.
    @Test func randomLinesNeverTrap() {
        var generator = SplitMix64(seed: 0x6265_6163_6F6E_64)
        let alphabet =
            Array(#"{}[]":,.-+0123456789eEtruefalsnul\ cmdstatusping"#.utf8) + [0x00, 0x0A, 0xFF, 0xC3, 0xA9]
        var answered = 0
        for _ in 0..<5_000 {
            let length = Int.random(in: 0...200, using: &generator)
            let bytes = (0..<length).map { _ in
                Bool.random(using: &generator)
                    ? alphabet[Int.random(in: 0..<alphabet.count, using: &generator)]
                    : UInt8.random(in: 0...255, using: &generator)
            }
            switch ClientRequest.parse(ByteBuffer(bytes: bytes)) {
            case .invalid(let reason):
                #expect(!reason.isEmpty && reason.utf8.count < 200)
                answered += 1
            case .some:
                answered += 1
            case nil:
                #expect(bytes.allSatisfy { [0x20, 0x09, 0x0A, 0x0D].contains($0) })
            }
        }
        #expect(answered > 4_750)
    }
}
