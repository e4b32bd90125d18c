import BLEPayload
import BeacondTestSupport
import CircuitState
import Foundation
import NIOCore
import Synchronization
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// Status replies under load: bounded lists, the per-client rate, the per-client byte bound.
@Suite(.serialized) struct SocketStatusBoundsTests {
    /// The stated bound of a status reply with full tables and short remote fields (docs/protocol.md).
    static let statusReplyBound = 192 * 1024

    @Test func fullOverrideTableGivesABoundedStatusReply() throws {
        let harness = try SocketHarness()
        defer { harness.close() }
        try harness.fillOverrideTable()
        #expect(try harness.onLoop { harness.hub.engine.overrideCount } == 4096)

        let started = Date()
        let line = try harness.onLoop { harness.status.line() }
        let buildSeconds = Date().timeIntervalSince(started)
        print("status reply with 4096 overrides: \(line.count) bytes, built in \(Int(buildSeconds * 1000)) ms")
        #expect(line.count < Self.statusReplyBound)
        let status = try #require(try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any])
        let overrides = try #require(status["overrides"] as? [[String: Any]])
        let beacons = try #require(status["beacons"] as? [[String: Any]])
        #expect(overrides.count == 256)
        #expect(status["overrides_omitted"] as? Int == 4096 - 256)
        #expect(beacons.count == 256)
        #expect(status["beacons_omitted"] as? Int == 0)
        // Best first: the one evacuation, heard late, is never among the omitted.
        #expect(overrides.first?["mode"] as? String == "evacuation")
        #expect((status["counters"] as? [String: Any])?["overrides"] as? Int == 4096)

        // A smaller limit cuts both lists and counts the rest.
        let cut = try harness.onLoop { harness.status.line(listLimit: 100) }
        let small = try #require(try JSONSerialization.jsonObject(with: Data(cut)) as? [String: Any])
        #expect((small["overrides"] as? [Any])?.count == 100)
        #expect(small["overrides_omitted"] as? Int == 3996)
        #expect((small["beacons"] as? [Any])?.count == 100)
        #expect(small["beacons_omitted"] as? Int == 156)

        // Over the socket, the same.
        let client = try harness.greetedClient()
        let reply = try client.request(#"{"cmd":"status"}"#, reply: "status")
        #expect(reply.line.count < Self.statusReplyBound)
        #expect((reply["overrides"] as? [Any])?.count == 256)
        #expect(reply["overrides_omitted"] as? Int == 3840)

        // `beacond status` shows the total, the listed rows and what it leaves out.
        let report = StatusReport.render(try reply.status())
        #expect(report.contains("active overrides (4096)\n"))
        #expect(report.contains("  … 3840 more not shown\n"))
        #expect(report.contains("beacons heard (256)\n"))
        #expect(report.components(separatedBy: "more not shown").count == 2)
        #expect(report.contains(", 0 closed for fair share"))
    }

    @Test func elevenStatusRequestsInOneSecondGetTenRepliesAndAnError() throws {
        // The window's clock is the test's: "a second later" is a step of it, not a wait.
        let clock = Atomic<UInt64>(1_000_000_000_000)
        var limits = ClientLimits()
        limits.clock = { clock.load(ordering: .relaxed) }
        let harness = try SocketHarness(limits: limits)
        defer { harness.close() }
        let client = try harness.greetedClient()
        let other = try harness.greetedClient()

        let eleven = Array(repeating: #"{"cmd":"status"}"#, count: 11).joined(separator: "\n") + "\n"
        try client.send(bytes: Array(eleven.utf8))
        var replies = 0
        var errors: [String] = []
        while replies + errors.count < 11 {
            let message = try client.readMessage()
            if message.type == "status" { replies += 1 }
            if message.type == "error" { errors.append(message["error"] as? String ?? "") }
        }
        #expect(replies == 10)
        #expect(errors == ["too many status requests (at most 10 per second)"])
        #expect(try harness.counters().refusedStatus == 1)

        // The limit is per client; and after a second the client is served again.
        #expect(try other.request(#"{"cmd":"status"}"#, reply: "status").type == "status")
        // Still refused at the same time; served again a second later.
        #expect(throws: TrackStateClient.ClientError.self) {
            try client.request(#"{"cmd":"status"}"#, reply: "status")
        }
        clock.add(1_000_000_000, ordering: .relaxed)
        #expect(try client.request(#"{"cmd":"status"}"#, reply: "status").type == "status")
    }

    @Test func statusReplyThatWouldNotFitTheByteBoundIsRefused() throws {
        var limits = ClientLimits()
        limits.maxQueuedBytes = 64 * 1024
        let harness = try SocketHarness(limits: limits)
        defer { harness.close() }
        try harness.fillOverrideTable()
        let client = try harness.greetedClient()

        let answer = try client.request(#"{"cmd":"status"}"#, reply: "error")
        let text = try #require(answer["error"] as? String)
        #expect(text.hasPrefix("status reply refused: "))
        #expect(text.hasSuffix("(at most 65536); read first"))
        let counters = try harness.counters()
        #expect(counters.refusedStatus == 1)
        #expect(counters.disconnectedSlow == 0)
        #expect(counters.peakQueuedBytes <= limits.maxQueuedBytes)
        #expect(try client.request(#"{"cmd":"ping"}"#, reply: "pong").type == "pong")
    }

    /// Clients that ask for status and never read: what the daemon holds for them stays within the
    /// per-client byte bound, and is all released when they go.
    @Test func nonReadingStatusClientsStayWithinTheByteBound() throws {
        let harness = try SocketHarness()
        defer { harness.close() }
        // Past 256 overrides a reply is as large as with a full table (the lists are cut at 256),
        // and far cheaper to build: this test is about bytes held, not the table's size.
        try harness.fillOverrideTable(count: 300)
        let bound = ClientLimits().maxQueuedBytes

        let count = 30
        let burst = Array(Array(repeating: #"{"cmd":"status"}"#, count: 8).joined(separator: "\n").utf8) + [0x0A]
        var clients: [TrackStateClient] = []
        for _ in 0..<count {
            let client = try harness.connect()
            try client.send(bytes: burst)
            clients.append(client)
        }
        // Wait until the daemon has built what it will for them: the figure stops moving.
        var last = -1
        var steady = 0
        let deadline = Date().addingTimeInterval(30)
        while steady < 5, Date() < deadline {
            usleep(100_000)
            let now = try harness.counters().queuedBytes
            steady = now == last ? steady + 1 : 0
            last = now
        }
        let held = try harness.counters()
        print(
            "\(count) non-reading status clients: \(held.queuedBytes) bytes held, "
                + "peak \(held.peakQueuedBytes) per client")
        #expect(steady >= 5)
        #expect(held.queuedBytes > 0)
        #expect(held.queuedBytes <= count * bound)
        #expect(held.peakQueuedBytes <= bound)
        #expect(held.clients == count)
        #expect(held.disconnectedSlow == 0)

        for client in clients { client.close() }
        #expect(try harness.eventually(timeout: 10) { try harness.counters().clients == 0 })
        #expect(try harness.counters().queuedBytes == 0)
    }
}

extension SocketHarness {
    /// Fills the override table (4096 entries by default): red flags, and one evacuation heard last.
    func fillOverrideTable(count: Int = 4096) throws {
        try onLoop {
            for index in 0..<count {
                let mode: GeoRacingMode = index == count - 1 ? .evacuation : .redFlag
                self.hub.ingest(
                    .circuit(zone: UInt16(1 + index % 50), mode: mode, sequence: 1),
                    address: BluetoothAddress(rawValue: UInt64(0xC0_0000 + index)), rssi: -60, txPower: nil)
            }
        }
    }
}
