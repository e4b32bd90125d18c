import BLEPayload
import BeacondTestSupport
import CircuitState
import Foundation
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// `history` over a real socket: the hub's race so far, page by page, on the wall clock
/// (docs/protocol.md, "history").
@Suite struct SocketHistoryTests {
    /// Zone 1 changes mode every 20 s (TTL 5 s, so each claim also expires): many stretches.
    func harnessWithARace(changes: Int) throws -> SocketHarness {
        let harness = try SocketHarness()
        for index in 0..<changes {
            harness.clock.time += 20 * SocketHarness.second
            let mode: GeoRacingMode = index.isMultiple(of: 2) ? .redFlag : .safetyCar
            try harness.onLoop {
                harness.hub.ingest(
                    .circuit(zone: 1, mode: mode, sequence: UInt16(index + 1), ttl: 5),
                    address: BluetoothAddress(rawValue: 0xC0_FF_EE_00_00_01), rssi: -60, txPower: nil)
            }
        }
        // Past the last expiry (the test clock fires no timer: an input evaluates the deadlines before it).
        harness.clock.time += 10 * SocketHarness.second
        try harness.ingest(zone: 2, mode: .normal, address: 0xC0_FF_EE_00_00_02)
        return harness
    }

    func page(_ client: TrackStateClient, _ query: HistoryQuery) throws -> HistoryMessage {
        let reply = try client.request(query.commandLine, reply: "history")
        guard case .history(let message) = try reply.decoded() else { throw TestSupportError("not history") }
        return message
    }

    @Test func pagesTogetherHoldTheWholeRaceOnTheWallClock() throws {
        let harness = try harnessWithARace(changes: 6)
        defer { harness.close() }
        let client = try harness.greetedClient()
        defer { client.close() }
        var query = HistoryQuery(limit: 3)
        var stretches: [RaceStretch] = []
        var pages: [HistoryMessage] = []
        repeat {
            let message = try page(client, query)
            pages.append(message)
            stretches += message.stretches
            query.after = message.next
        } while pages.last?.more == true
        #expect(pages.count > 2)
        #expect(pages.dropLast().allSatisfy { $0.stretches.count == 3 && $0.more })
        let whole = try page(client, HistoryQuery())
        #expect(!whole.more && whole.stretches == stretches)
        let zone = stretches.filter { $0.row == .zone(1) }.sorted { $0.start < $1.start }
        #expect(zone.map(\.mode) == [.redFlag, .safetyCar, .redFlag, .safetyCar, .redFlag, .safetyCar])
        // Engine time (the test clock) becomes wall time by one offset: spacing and length are kept.
        #expect(zone.map { $0.end - $0.start }.allSatisfy { $0 == 5 * SocketHarness.second })
        #expect(zip(zone, zone.dropFirst()).allSatisfy { $1.start - $0.start == 20 * SocketHarness.second })
        let wallNow = MonotonicClock.wallMicros()
        #expect(abs(whole.now - wallNow) < 60 * SocketHarness.second)
        #expect(whole.now - (zone.last?.end ?? 0) == 5 * SocketHarness.second)
        #expect(whole.kept == stretches.count && whole.dropped == 0 && whole.limit == TrackStateHub.historyLimit)
    }

    @Test func sinceKeepsOnlyWhatEndedInTheWindow() throws {
        let harness = try harnessWithARace(changes: 6)
        defer { harness.close() }
        let client = try harness.greetedClient()
        defer { client.close() }
        let recent = try page(client, HistoryQuery(sinceSeconds: 30))
        let since = try #require(recent.since)
        #expect(recent.now - since == 30 * SocketHarness.second)
        #expect(!recent.stretches.isEmpty && recent.stretches.allSatisfy { $0.end >= since })
        #expect(try page(client, HistoryQuery()).stretches.count > recent.stretches.count)
    }

    @Test func historyRequestsShareTheStatusRate() throws {
        let harness = try SocketHarness()
        defer { harness.close() }
        let client = try harness.greetedClient()
        defer { client.close() }
        var refused: [String] = []
        for _ in 0..<11 {
            do {
                _ = try page(client, HistoryQuery())
            } catch .serverError(_, let message) as TrackStateClient.ClientError {
                refused.append(message)
            }
        }
        #expect(refused == ["too many history requests (at most 10 per second)"])
    }
}
