import BLEPayload
import BeacondTestSupport
import Foundation
import NIOCore
import Testing

@testable import BeacondClient
@testable import BeacondCore

#if canImport(Glibc)
import Glibc
#endif

/// Protocol v1 over a real socket: greeting, commands, errors, framing.
@Suite(.serialized) struct SocketProtocolTests {
    @Test func helloThenCurrentStateOnConnect() throws {
        let harness = try SocketHarness()
        defer { harness.close() }
        try harness.ingest(zone: 3, mode: .redFlag, address: 0xC0FFEE000003)
        let seq = harness.seq
        #expect(seq == 2)

        let client = try harness.connect()
        let hello = try client.readMessage()
        #expect(hello.type == "hello")
        #expect(hello["protocol"] as? Int == 1)
        #expect(hello["version"] as? String == BeacondVersion.current)
        let state = try client.readMessage()
        #expect(state.type == "state")
        #expect(state["seq"] as? Int == seq)
        #expect(state["mode"] as? String == "red_flag")
        #expect(state["source"] as? String == "beacon")
        #expect(state["zone"] as? Int == 3)
        let beacon = state["beacon"] as? [String: Any]
        #expect(beacon?["key"] as? String == "zone 3 @ C0:FF:EE:00:00:03")
        #expect(beacon?["addr"] as? String == "C0:FF:EE:00:00:03")
        #expect((state["scanner"] as? [String: Any])?["backend"] as? String == "test")

        // The socket file is a socket with mode 0660, whatever the umask.
        let mode = try #require(fileMode(harness.path))
        #expect(mode & S_IFMT == S_IFSOCK)
        #expect(mode & 0o777 == 0o660)
    }

    @Test func statusPingAndSubscribeRoundTrips() throws {
        let harness = try SocketHarness()
        defer { harness.close() }
        let client = try harness.greetedClient()

        #expect(try client.request(#"{"cmd":"ping"}"#, reply: "pong").type == "pong")

        try harness.ingest(zone: 2, mode: .safetyCar, address: 2)
        let status = try client.request(#"{"cmd":"status"}"#, reply: "status")
        #expect(status["protocol"] as? Int == 1)
        #expect((status["state"] as? [String: Any])?["seq"] as? Int == harness.seq)
        #expect((status["state"] as? [String: Any])?["mode"] as? String == "safety_car")
        #expect((status["overrides"] as? [[String: Any]])?.first?["key"] as? String == "zone 2 @ 00:00:00:00:00:02")
        let server = try #require(status["server"] as? [String: Any])
        #expect(server["clients"] as? Int == 1)
        #expect(server["max_clients"] as? Int == 1024)
        #expect(server["rejected_clients"] as? Int == 0)
        #expect(server["dropped_lines"] as? Int == 0)
        #expect(server["disconnected_slow"] as? Int == 0)
        #expect(server["errors"] as? Int == 0)

        // Beacon updates only after subscribing.
        let subscribed = try client.request(#"{"cmd":"subscribe","beacons":true}"#, reply: "subscribed")
        #expect(subscribed["beacons"] as? Bool == true)
        try harness.ingest(zone: 4, mode: .normal, address: 4, rssi: -127)
        let (update, _) = try client.read(until: "beacon")
        let beacon = try #require(update["beacon"] as? [String: Any])
        #expect(beacon["key"] as? String == "zone 4 @ 00:00:00:00:00:04")
        #expect(beacon["rssi"] as? Int == -127)
        #expect(beacon["rejected"] as? String == "rssi")
        #expect(beacon["active"] as? Bool == false)
        #expect(update["ts"] is Double)

        let unsubscribed = try client.request(#"{"cmd":"subscribe","beacons":false}"#, reply: "subscribed")
        #expect(unsubscribed["beacons"] as? Bool == false)
        try harness.ingest(zone: 5, mode: .normal, address: 5, rssi: -127)
        var skipped: [String] = []
        _ = try client.request(#"{"cmd":"ping"}"#, reply: "pong") { skipped.append($0.type) }
        #expect(!skipped.contains("beacon"))

        // A subscribe without "beacons" subscribes to them.
        #expect(try client.request(#"{"cmd":"subscribe"}"#, reply: "subscribed")["beacons"] as? Bool == true)
    }

    @Test func everyClientReceivesEachStateChange() throws {
        let harness = try SocketHarness()
        defer { harness.close() }
        let clients = try (0..<5).map { _ in try harness.greetedClient() }
        try harness.ingest(zone: 7, mode: .redFlag, address: 7)
        try harness.onLoop { harness.hub.setScanner(.up) }
        for client in clients {
            let first = try client.readMessage()
            let second = try client.readMessage()
            #expect(first["seq"] as? Int == 2 && first["mode"] as? String == "red_flag")
            #expect(second["seq"] as? Int == 3 && (second["scanner"] as? [String: Any])?["state"] as? String == "up")
        }
    }

    @Test func garbageIsAnsweredAndIsolated() throws {
        let harness = try SocketHarness()
        defer { harness.close() }
        let bad = try harness.greetedClient()
        let good = try harness.greetedClient()

        let cases: [([UInt8], String)] = [
            (Array("hello".utf8), "invalid JSON"),
            (Array("[1,2]".utf8), "expected a JSON object"),
            (
                Array(#"{"cmd":"dance"}"#.utf8),
                #"unknown command "dance" (expected status, subscribe, ping or history)"#
            ),
            (Array(#"{"cmd":"subscribe","beacons":1}"#.utf8), #""beacons" must be true or false"#),
            (Array(#"{"nocmd":true}"#.utf8), #"missing "cmd""#),
            (Array(#"{"cmd":5}"#.utf8), #""cmd" must be a string"#),
            ([0x7B, 0xFF, 0xFE, 0x7D], "line is not valid UTF-8 (at byte 1)"),
        ]
        for (line, expected) in cases {
            try bad.send(bytes: line + [0x0A])
            let answer = try bad.readMessage()
            #expect(answer.type == "error")
            #expect(answer["error"] as? String == expected)
        }
        // Blank lines are ignored; the connection still works.
        try bad.send(bytes: Array("\n  \r\n".utf8))
        #expect(try bad.request(#"{"cmd":"ping"}"#, reply: "pong").type == "pong")

        // The other client noticed nothing, and both still get state changes.
        #expect(try good.request(#"{"cmd":"ping"}"#, reply: "pong").type == "pong")
        try harness.ingest(zone: 1, mode: .redFlag, address: 1)
        #expect(try good.readMessage()["mode"] as? String == "red_flag")
        #expect(try bad.readMessage()["mode"] as? String == "red_flag")
        #expect(try harness.counters().errors == cases.count)
    }

    @Test func overlongLinesAreRejectedAndTheStreamStaysInStep() throws {
        let harness = try SocketHarness()
        defer { harness.close() }
        let client = try harness.greetedClient()

        // 4097 bytes: one too many.
        try client.send(bytes: [UInt8](repeating: UInt8(ascii: "x"), count: 4097) + [0x0A])
        let error = try client.readMessage()
        #expect(error.type == "error")
        #expect(error["error"] as? String == "line too long (over 4096 bytes)")

        // Exactly 4096 bytes is fine (a ping padded with spaces), also with "\r\n".
        let ping = Array(#"{"cmd":"ping"}"#.utf8)
        let padded = ping + [UInt8](repeating: 0x20, count: 4096 - ping.count)
        try client.send(bytes: padded + [0x0A])
        #expect(try client.readMessage().type == "pong")
        try client.send(bytes: padded + [0x0D, 0x0A])
        #expect(try client.readMessage().type == "pong")

        // A long line arriving in pieces gets one error, then the next line is read normally.
        // Each piece is sent once the server has read the one before, so they arrive in separate
        // reads (LineFrameDecoder's own split handling is covered byte by byte in
        // ChannelHandlerTests).
        let readByTheServer = { blockingWaitUntil(within: 2, intervalMicros: 500) { client.bytesNotYetRead == 0 } }
        for _ in 0..<5 {
            try client.send(bytes: [UInt8](repeating: UInt8(ascii: "y"), count: 3000))
            #expect(readByTheServer())
        }
        try client.send(bytes: Array("\n{\"cmd\":".utf8))
        #expect(readByTheServer())
        try client.send(bytes: Array("\"ping\"}\n".utf8))
        let (pong, before) = try client.read(until: "pong")
        #expect(pong.type == "pong")
        #expect(before.map(\.type) == ["error"])
        #expect(before.first?["error"] as? String == "line too long (over 4096 bytes)")
    }

    @Test func repeatedAbuseClosesOnlyThatConnection() throws {
        let harness = try SocketHarness()
        defer { harness.close() }
        let abuser = try harness.greetedClient()
        let patient = try harness.greetedClient()
        let bystander = try harness.greetedClient()

        // Nine errors are tolerated.
        for _ in 0..<9 { try patient.send(command: "nonsense") }
        for _ in 0..<9 { #expect(try patient.readMessage().type == "error") }
        #expect(try patient.request(#"{"cmd":"ping"}"#, reply: "pong").type == "pong")

        // The tenth closes the connection, after saying why.
        for _ in 0..<10 { try abuser.send(command: "nonsense") }
        var errors: [String] = []
        for _ in 0..<11 { errors.append(try abuser.readMessage()["error"] as? String ?? "") }
        #expect(errors.prefix(10).allSatisfy { $0 == "invalid JSON" })
        #expect(errors.last == "too many errors (10): closing the connection")
        #expect(abuser.isClosedByServer())

        #expect(try bystander.request(#"{"cmd":"ping"}"#, reply: "pong").type == "pong")
        #expect(try patient.request(#"{"cmd":"status"}"#, reply: "status").type == "status")
        #expect(try harness.eventually { try harness.counters().clients == 2 })
        let counters = try harness.counters()
        #expect(counters.disconnectedAbuse == 1)
        #expect(counters.errors == 9 + 11)
    }

    @Test func unterminatedLineAtCloseIsIgnored() throws {
        let harness = try SocketHarness()
        defer { harness.close() }
        let client = try harness.greetedClient()
        try client.send(bytes: Array("garbage without newline".utf8))
        client.close()
        #expect(try harness.eventually { try harness.counters().clients == 0 })
        #expect(try harness.counters().errors == 0)
    }
}

/// Parsing of one command line, without a socket.
@Suite struct ClientRequestTests {
    func parse(_ text: String) -> ClientRequest? {
        ClientRequest.parse(ByteBuffer(string: text))
    }

    @Test func commands() {
        #expect(parse(#"{"cmd":"status"}"#) == .status)
        #expect(parse(#" {"cmd":"ping","extra":[1,{"x":null}]} "#) == .ping)
        #expect(parse(#"{"cmd":"subscribe","beacons":false}"#) == .subscribe(beacons: false))
        #expect(parse(#"{"beacons":true,"cmd":"subscribe"}"#) == .subscribe(beacons: true))
        #expect(parse("   ") == nil)
        #expect(parse(#""ping""#) == .invalid(reason: "expected a JSON object"))
        #expect(parse(#"{"cmd":"subscribe","beacons":null}"#) == .invalid(reason: #""beacons" must be true or false"#))
        #expect(parse(#"{"cmd":"ping"} {"cmd":"ping"}"#) == .invalid(reason: "invalid JSON"))
        let long = String(repeating: "z", count: 100)
        #expect(
            parse("{\"cmd\":\"\(long)\"}")
                == .invalid(
                    reason:
                        "unknown command \"\(String(repeating: "z", count: 64))…\" "
                        + "(expected status, subscribe, ping or history)"
                ))
    }
}
