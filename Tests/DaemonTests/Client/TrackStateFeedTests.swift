import BeacondTestSupport
import CLinux
import Foundation
import Glibc
import Synchronization
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// The feed a kiosk follows the daemon with: greeting, pushed states, loss, reconnection, pings.
@Suite struct TrackStateFeedTests {
    /// Collects a feed's events from its thread.
    final class Events: Sendable {
        private let events = Mutex<[TrackStateFeed.Event]>([])

        func append(_ event: TrackStateFeed.Event) { events.withLock { $0.append(event) } }
        var all: [TrackStateFeed.Event] { events.withLock { $0 } }

        var modes: [String] {
            all.compactMap { event in
                switch event {
                case .connected(let state), .state(let state): state.mode
                case .lost: nil
                }
            }
        }

        var lossReasons: [String] {
            all.compactMap { if case .lost(let reason) = $0 { reason } else { nil } }
        }

        var connections: Int {
            all.reduce(0) { count, event in if case .connected = event { count + 1 } else { count } }
        }
    }

    func feed(path: String, pingInterval: Double = 5, replyTimeout: Double = 5) -> (TrackStateFeed, Events) {
        let events = Events()
        var configuration = TrackStateFeed.Configuration(path: path)
        configuration.pingInterval = pingInterval
        configuration.replyTimeout = replyTimeout
        return (TrackStateFeed(configuration: configuration) { events.append($0) }, events)
    }

    @Test func followsTheGreetingAndEveryPushedState() throws {
        let harness = try SocketHarness()
        defer { harness.close() }
        let (feed, events) = feed(path: harness.path)
        try feed.start()
        defer { feed.stop() }
        #expect(blockingWaitUntil { events.connections == 1 })
        #expect(events.modes == ["unknown"])
        try harness.ingest(zone: 3, mode: .redFlag, address: 1)
        #expect(blockingWaitUntil { events.modes.last == "red_flag" })
        guard case .state(let state) = events.all.last else {
            Issue.record("the pushed state is not a .state event: \(events.all)")
            return
        }
        #expect(state.zone == 3)
        #expect(state.source == "beacon")
        #expect(events.lossReasons.isEmpty)
    }

    @Test func aDaemonThatGoesAwayIsLostAndFollowedAgainWhenItReturns() throws {
        let path = SocketHarness.temporaryPath()
        let (feed, events) = feed(path: path)
        try feed.start()
        defer { feed.stop() }
        #expect(blockingWaitUntil { !events.lossReasons.isEmpty })
        #expect(events.lossReasons.first == "the daemon is not running (nobody listens on the socket)")

        let first = try SocketHarness(path: path)
        #expect(blockingWaitUntil { events.connections == 1 })
        let lossesBefore = events.lossReasons.count
        first.close()
        #expect(blockingWaitUntil { events.lossReasons.count > lossesBefore })

        // The backoff is capped at 2 s: a daemon back on the same path is followed within that.
        let second = try SocketHarness(path: path)
        defer { second.close() }
        let back = MonotonicClock.micros()
        #expect(blockingWaitUntil { events.connections == 2 })
        #expect(MonotonicClock.micros() - back < 3_000_000)
        try second.ingest(zone: 1, mode: .evacuation, address: 2)
        #expect(blockingWaitUntil { events.modes.last == "evacuation" })
    }

    @Test func aSilentDaemonIsPingedAndLostWhenItDoesNotAnswer() throws {
        let server = try SilentDaemon()
        defer { server.close() }
        let (feed, events) = feed(path: server.path, pingInterval: 0.3, replyTimeout: 0.5)
        try feed.start()
        defer { feed.stop() }
        #expect(blockingWaitUntil { events.connections == 1 })
        #expect(blockingWaitUntil { !events.lossReasons.isEmpty })
        #expect(events.lossReasons.first == "no answer from the daemon (waited for an answer to ping)")
        #expect(server.received().contains(#"{"cmd":"ping"}"#))
    }

    @Test func aStoppedFeedReportsNothingMore() throws {
        let harness = try SocketHarness()
        defer { harness.close() }
        let (feed, events) = feed(path: harness.path)
        try feed.start()
        #expect(blockingWaitUntil { events.connections == 1 })
        feed.stop()
        // The stop ends the thread's read at once: it closes its connection, and reads nothing more.
        #expect(blockingWaitUntil(within: 2) { (try? harness.onLoop { harness.server.clientCount }) == 0 })
        let count = events.all.count
        try harness.ingest(zone: 3, mode: .redFlag, address: 1)
        #expect(blockingWaitUntil(within: 1) { events.all.count > count } == false)
    }
}

/// A Unix socket "daemon" that greets each client with hello and a state, then never writes
/// again; what clients send is kept.
final class SilentDaemon: @unchecked Sendable {
    let path = SocketHarness.temporaryPath()
    private let listener: Int32
    private let lock = NSLock()
    private var bytes: [UInt8] = []
    private var clients: [Int32] = []
    private var closed = false

    init() throws {
        listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        let bound = UnixSocketPath(path).withAddress { address, length in bind(listener, address, length) }
        guard listener >= 0, bound == 0, listen(listener, 8) == 0 else {
            throw POSIXError(.init(rawValue: errno) ?? .EIO)
        }
        let thread = Thread { [self] in serve() }
        thread.start()
    }

    private func serve() {
        while true {
            let client = accept(listener, nil, nil)
            guard client >= 0 else { return }
            lock.withLock { clients.append(client) }
            let greeting = HelloMessage().line + StateMessage.sample.line
            _ = greeting.withUnsafeBytes { write(client, $0.baseAddress, $0.count) }
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = chunk.withUnsafeMutableBytes { read(client, $0.baseAddress, $0.count) }
                guard count > 0 else { break }
                lock.withLock { bytes += chunk[0..<count] }
            }
        }
    }

    /// Everything clients sent so far, as text.
    func received() -> String { lock.withLock { String(decoding: bytes, as: UTF8.self) } }

    func close() {
        lock.withLock {
            guard !closed else { return }
            closed = true
            shutdown(listener, Int32(SHUT_RDWR))
            Glibc.close(listener)
            for client in clients {
                shutdown(client, Int32(SHUT_RDWR))
                Glibc.close(client)
            }
        }
        unlink(path)
    }
}

extension StateMessage {
    /// A plain state: normal, from race control, scanner up.
    static let sample = StateMessage(
        seq: 1, time: WallTime(micros: 1_700_000_000_000_000), mode: "normal", source: "remote", zone: nil,
        beacon: nil, remote: nil, scanner: ScannerStatus(backend: "test", state: .up))
}
