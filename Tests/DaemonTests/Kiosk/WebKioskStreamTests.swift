import BLEPayload
import BeacondTestSupport
import Foundation
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// `/events`: the first event, changes, refreshes, the daemon going away, the client cap and
/// a browser that stops reading.
@Suite(.serialized) struct WebKioskStreamTests {
    static func openStream(_ web: WebKioskHarness, receiveBuffer: Int? = nil) throws -> HTTPTestConnection {
        let connection = try HTTPTestConnection(port: web.port, receiveBuffer: receiveBuffer)
        connection.send("GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n")
        return connection
    }

    static func flag(_ event: [String: Any]) -> String? { event["flag"] as? String }

    @Test func firstEventThenChangesAndRefreshes() throws {
        let daemon = try SocketHarness()
        var daemonRunning = true
        defer { if daemonRunning { daemon.close() } }
        let web = try WebKioskHarness(socketPath: daemon.path)
        defer { web.close() }
        #expect(web.waitForHealth(200))
        let stream = try Self.openStream(web)
        defer { stream.close() }
        let head = try stream.readHead()
        #expect(head.status == 200 && head.header("content-type") == "text/event-stream; charset=utf-8")
        #expect(head.header("content-security-policy") == WebKioskAssets.contentSecurityPolicy)
        #expect(head.header("cache-control") == "no-store")
        // The daemon has no beacon and no race control yet: connected, but NO SIGNAL.
        let first = try stream.readEvent { _ in true }
        #expect(Self.flag(first) == "no_signal" && first["status"] as? String == "NO SIGNAL")

        // A state change reaches the stream at once; the latency is reported.
        let changed = MonotonicClock.micros()
        try daemon.ingest(zone: 2, mode: .evacuation, address: 0xC0FFEE000002)
        let evacuation = try stream.readEvent(timeout: 2) { Self.flag($0) == "evacuation" }
        let latency = MonotonicClock.micros() - changed
        print("web kiosk: state change to SSE event in \(latency) µs")
        #expect(latency < 500_000)
        #expect(evacuation["flashes"] as? Bool == true && evacuation["headline"] as? String == "EVACUATE")
        #expect(evacuation["flash_background"] as? String == "#ffffff")
        #expect((evacuation["details"] as? [String])?.first == "Zone 2")

        // With nothing changing, the view comes again within about a second.
        let refreshStarted = MonotonicClock.micros()
        let refreshed = try stream.readEvent(timeout: 2) { _ in true }
        #expect(Self.flag(refreshed) == "evacuation")
        #expect(MonotonicClock.micros() - refreshStarted < 1_500_000)

        // The daemon goes away: NO SIGNAL — daemon unreachable, and /healthz says 503.
        daemon.close()
        daemonRunning = false
        let lost = try stream.readEvent(timeout: 5) { Self.flag($0) == "no_signal" }
        #expect(lost["status"] as? String == "NO SIGNAL — daemon unreachable")
        #expect(web.waitForHealth(503))
    }

    /// State message → SSE event, over 40 changes (the scanner going up and down: the NO SIGNAL
    /// view says "Bluetooth scanner down" or not); the figures are printed for docs/kiosk-web.md.
    @Test func stateChangesReachTheStreamPromptly() throws {
        try WebKioskHarness.withDaemon { daemon, web in
            let stream = try Self.openStream(web)
            defer { stream.close() }
            _ = try stream.readHead()
            _ = try stream.readEvent()
            var latencies: [Int64] = []
            for _ in 0..<40 {
                let up = try daemon.onLoop {
                    daemon.toggleScannerOnLoop(); return daemon.hub.scanner.state == .up
                }
                let changed = MonotonicClock.micros()
                _ = try stream.readEvent(timeout: 2) { event in
                    let down =
                        (event["details"] as? [String])?.contains { $0.hasPrefix("Bluetooth scanner down") } ?? false
                    return down != up
                }
                latencies.append(MonotonicClock.micros() - changed)
            }
            latencies.sort()
            print("web kiosk: state change → SSE event: median \(latencies[20]) µs, max \(latencies[39]) µs (40)")
            #expect(latencies[39] < 500_000)
        }
    }

    @Test func theStreamFollowsADaemonThatComesBack() throws {
        let path = SocketHarness.temporaryPath()
        let web = try WebKioskHarness(socketPath: path)
        defer { web.close() }
        let stream = try Self.openStream(web)
        defer { stream.close() }
        _ = try stream.readHead()
        #expect(try stream.readEvent { _ in true }["status"] as? String == "NO SIGNAL — daemon unreachable")
        let daemon = try SocketHarness(path: path)
        defer { daemon.close() }
        try daemon.ingest(zone: 1, mode: .redFlag, address: 0xC0FFEE000001)
        // The feed retries within its 2 s backoff.
        let red = try stream.readEvent(timeout: 5) { Self.flag($0) == "red" }
        #expect(red["status"] as? String == "RED FLAG")
    }

    @Test func theStreamCapRefusesTheNextClientWith503() throws {
        let web = try WebKioskHarness(socketPath: SocketHarness.temporaryPath()) { $0.maxClients = 3 }
        defer { web.close() }
        var streams: [HTTPTestConnection] = []
        defer { for stream in streams { stream.close() } }
        for _ in 0..<3 {
            let stream = try Self.openStream(web)
            #expect(try stream.readHead().status == 200)
            streams.append(stream)
        }
        let refused = try Self.openStream(web)
        defer { refused.close() }
        let answer = try refused.readResponse()
        #expect(answer.status == 503 && answer.header("connection") == "close")
        #expect(answer.text.contains("at most 3"))
        #expect(refused.isClosed())
        #expect(web.counters.refusedStreams == 1 && web.counters.streams == 3)
        // Other routes still answer while the streams are full.
        #expect(try web.get("/state").status == 200)
        // One leaves: the next is let in.
        streams.removeFirst().close()
        #expect(blockingWaitUntil(within: 3) { web.counters.streams == 2 })
        let next = try Self.openStream(web)
        defer { next.close() }
        #expect(try next.readHead().status == 200)
        #expect(web.counters.acceptedStreams == 4 && web.counters.peakStreams == 3)
    }

    /// A browser that never reads: its events are coalesced once its buffers are full, and a
    /// reading browser still gets every change at once.
    @Test func aClientThatNeverReadsDoesNotDelayAnother() throws {
        try WebKioskHarness.withDaemon(configure: { $0.idleTimeout = .seconds(60) }) { daemon, web in
            let stalled = try Self.openStream(web, receiveBuffer: 2048)
            defer { stalled.close() }
            let reader = try Self.openStream(web)
            defer { reader.close() }
            _ = try reader.readHead()
            _ = try reader.readEvent()
            #expect(blockingWaitUntil(within: 3) { web.counters.streams == 2 })
            let greeting = try #require(try web.onLoop { $0.latestState })

            // Changes straight into the hub (each a new zone: a new view), while the reader keeps
            // reading; until the stalled client's buffers are full and its events coalesce.
            var zone = 0
            while web.counters.coalescedEvents < 20 && zone < 200_000 {
                let batch = (zone + 1)...(zone + 200)
                zone += 200
                try web.onLoop { hub in
                    for number in batch {
                        var state = greeting
                        state.mode = "red_flag"
                        state.source = "beacon"
                        state.zone = number
                        hub.apply(.state(state))
                    }
                }
                while (try? reader.readEvent(timeout: 0.001)) != nil {}
            }
            #expect(web.counters.coalescedEvents >= 20)
            #expect(web.counters.streams == 2)

            // One more change: the reader sees it promptly, though the other has not read a byte.
            let changed = MonotonicClock.micros()
            try daemon.ingest(zone: 9, mode: .evacuation, address: 0xC0FFEE000009)
            let event = try reader.readEvent(timeout: 2) { Self.flag($0) == "evacuation" }
            #expect((event["details"] as? [String])?.first == "Zone 9")
            #expect(MonotonicClock.micros() - changed < 500_000)
        }
    }
}
