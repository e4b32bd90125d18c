import BLEPayload
import BeacondTestSupport
import CLinux
import Foundation
import NIOCore
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// Many clients, slow clients, and what the server's queues do about them.
@Suite(.serialized) struct SocketLoadTests {
    @Test func thousandConcurrentSubscribersAllReceiveAChange() throws {
        let limit = TrackStateServer.raiseOpenFileLimit()
        // Both ends of every connection live in this process.
        try #require(limit >= 2_100, "RLIMIT_NOFILE hard limit too low for 1,000 clients: \(limit)")
        let harness = try SocketHarness()
        defer { harness.close() }

        let clients = try (0..<1000).map { _ in try harness.connect() }
        for client in clients {
            let (hello, state) = try client.handshake()
            #expect(hello["protocol"] as? Int == 1)
            #expect(state["seq"] as? Int == 1)
        }
        #expect(try harness.counters().clients == 1000)

        let started = Date()
        try harness.ingest(zone: 9, mode: .evacuation, address: 9)
        var received = 0
        for client in clients {
            let message = try client.readMessage()
            if message.type == "state", message["seq"] as? Int == 2, message["mode"] as? String == "evacuation" {
                received += 1
            }
        }
        #expect(received == 1000)
        #expect(Date().timeIntervalSince(started) < 5)
        for client in clients { client.close() }
        #expect(try harness.eventually { try harness.counters().clients == 0 })
    }

    @Test func clientOverCapacityGetsAnErrorAndIsClosed() throws {
        let harness = try SocketHarness(maxClients: 3)
        defer { harness.close() }
        let clients = try (0..<3).map { _ in try harness.greetedClient() }

        let extra = try harness.connect()
        let refusal = try extra.readMessage()
        #expect(refusal.type == "error")
        #expect(refusal["error"] as? String == "server full: 3 clients connected (max_clients)")
        #expect(extra.isClosedByServer())
        #expect(try harness.counters().rejectedClients == 1)

        // The others are served as before; a freed place is taken again.
        #expect(try clients[0].request(#"{"cmd":"ping"}"#, reply: "pong").type == "pong")
        clients[1].close()
        #expect(try harness.eventually { try harness.counters().clients == 2 })
        let next = try harness.connect()
        #expect(try next.readMessage().type == "hello")
        let status = try next.request(#"{"cmd":"status"}"#, reply: "status")
        #expect((status["server"] as? [String: Any])?["rejected_clients"] as? Int == 1)
        #expect((status["server"] as? [String: Any])?["clients"] as? Int == 3)
    }

    /// A client that subscribes to beacon updates and then never reads: the others still get
    /// every state, its queue stays bounded, and it is eventually disconnected.
    @Test func nonReadingClientCannotStallTheOthers() throws {
        var limits = ClientLimits()
        limits.maxQueuedBeacons = 16
        limits.slowClientTimeout = .milliseconds(300)
        let harness = try SocketHarness(limits: limits)
        defer { harness.close() }

        let slow = try harness.connect()
        try slow.send(command: #"{"cmd":"subscribe","beacons":true}"#)
        let fast = try harness.greetedClient()
        let fastWatcher = try harness.greetedClient()
        _ = try fastWatcher.request(#"{"cmd":"subscribe","beacons":true}"#, reply: "subscribed")
        let firstSeq = harness.seq

        var seen: [Int] = []
        var watcherBeacons = 0
        var watcherDropped = 0
        let started = Date()
        for batch in 0..<40 {
            try harness.onLoop {
                for index in 0..<50 {
                    // Heard but too weak to override: a beacon update each, no state change.
                    harness.hub.ingest(
                        .circuit(zone: 1, mode: .normal, sequence: 1),
                        address: BluetoothAddress(rawValue: UInt64(10_000 + batch * 50 + index)),
                        rssi: -127, txPower: nil)
                }
                harness.toggleScannerOnLoop()
            }
            let target = harness.seq
            while seen.last != target {
                let message = try fast.readMessage()
                if message.type == "state", let seq = message["seq"] as? Int { seen.append(seq) }
            }
            // A second reading client, subscribed to beacons too, keeps up with everything.
            while true {
                let message = try fastWatcher.readMessage()
                if message.type == "beacon" { watcherBeacons += 1 }
                if message.type == "dropped" { watcherDropped += 1 }
                if message.type == "state", message["seq"] as? Int == target { break }
            }
        }
        #expect(Date().timeIntervalSince(started) < 10)
        // The reading client saw every state, in order, none coalesced.
        #expect(seen == Array((firstSeq + 1)...(firstSeq + 40)))
        #expect(watcherBeacons == 2000)
        #expect(watcherDropped == 0)

        // The slow one lost beacon updates, stayed bounded, and was cut off.
        #expect(try harness.eventually { try harness.counters().disconnectedSlow == 1 })
        let counters = try harness.counters()
        #expect(counters.droppedLines > 0)
        #expect(counters.peakQueuedLines <= 2 * limits.maxQueuedBeacons + 2)
        #expect(counters.clients == 2)
        #expect(slow.isClosedByServer())
        #expect(try fast.request(#"{"cmd":"ping"}"#, reply: "pong").type == "pong")
    }

    /// A backed-up kiosk gets fewer states, never an old one after a newer one, and the latest in the end.
    @Test func backedUpClientGetsCoalescedStatesEndingWithTheLatest() throws {
        let harness = try SocketHarness(limits: .patient)
        defer { harness.close() }
        let kiosk = try harness.greetedClient()
        let firstSeq = harness.seq

        let changes = 3000
        let (seqs, finalSeq) = try harness.toggleScanner(changes, readingStatesWith: kiosk)
        #expect(finalSeq == firstSeq + changes)
        #expect(seqs.count < changes)
        let counters = try harness.counters()
        #expect(counters.coalescedStates > 0)
        #expect(counters.coalescedStates + seqs.count == changes)
        #expect(counters.disconnectedSlow == 0)
        #expect(try kiosk.request(#"{"cmd":"ping"}"#, reply: "pong").type == "pong")
    }

    /// Beacon updates beyond the cap are dropped and the client told how many, at the gap:
    /// delivered + reported dropped == published.
    @Test func droppedBeaconUpdatesAreReported() throws {
        var limits = ClientLimits.patient
        limits.maxQueuedBeacons = 8
        limits.maxConsecutiveDrops = 1_000_000
        let harness = try SocketHarness(limits: limits)
        defer { harness.close() }
        let client = try harness.greetedClient()
        _ = try client.request(#"{"cmd":"subscribe","beacons":true}"#, reply: "subscribed")

        let updates = 3000
        try harness.onLoop {
            for index in 0..<updates {
                harness.hub.ingest(
                    .circuit(zone: 2, mode: .normal, sequence: 1),
                    address: BluetoothAddress(rawValue: UInt64(50_000 + index)), rssi: -127,
                    txPower: nil)
            }
        }
        #expect(try harness.onLoop { harness.publisher.counters.beaconUpdates } == updates)

        try client.send(command: #"{"cmd":"ping"}"#)
        var delivered = 0
        var reportedDropped = 0
        var notices = 0
        var lastWasNotice = false
        while true {
            let message = try client.readMessage()
            if message.type == "pong" { break }
            if message.type == "beacon" { delivered += 1; lastWasNotice = false }
            if message.type == "dropped" {
                #expect(!lastWasNotice, "two dropped notices in a row")
                notices += 1
                reportedDropped += message["count"] as? Int ?? 0
                lastWasNotice = true
            }
        }
        let counters = try harness.counters()
        #expect(reportedDropped > 0)
        #expect(notices >= 1)
        #expect(delivered + reportedDropped == updates)
        #expect(counters.droppedLines == reportedDropped)
        #expect(counters.disconnectedSlow == 0)
        #expect(counters.peakQueuedLines <= 2 * limits.maxQueuedBeacons + 2)
    }

    /// A client that sends commands without reading the answers: the daemon stops reading from
    /// it instead of buffering answers without bound, and never drops one.
    @Test func commandFloodWithoutReadingStaysBounded() throws {
        // Pacing, not the status rate limit, is under test here.
        var limits = ClientLimits()
        limits.maxStatusPerSecond = 1_000_000
        let harness = try SocketHarness(limits: limits)
        defer { harness.close() }
        // Enough beacons that every status answer is a few KiB.
        try harness.onLoop {
            for index in 0..<20 {
                harness.hub.ingest(
                    .circuit(zone: 1, mode: .normal, sequence: 1),
                    address: BluetoothAddress(rawValue: UInt64(70_000 + index)), rssi: -127, txPower: nil)
            }
        }
        let flooder = try harness.greetedClient()
        let other = try harness.greetedClient()

        // Write commands until the socket takes no more (nonblocking).
        let command = Array(#"{"cmd":"status"}"#.utf8) + [0x0A]
        let flags = fcntl(flooder.descriptor, F_GETFL)
        _ = fcntl(flooder.descriptor, F_SETFL, flags | O_NONBLOCK)
        var sentCommands = 0
        var stalls = 0
        while stalls < 20 {
            let written = command.withUnsafeBytes {
                send(flooder.descriptor, $0.baseAddress!, $0.count, Int32(MSG_NOSIGNAL))
            }
            if written == command.count {
                sentCommands += 1
                stalls = 0
            } else {
                #expect(written < 0, "partial command write")
                if written > 0 { break }
                stalls += 1
                // Real time on purpose: the flood retries a full socket buffer at a steady pace.
                usleep(5_000)
            }
        }
        _ = fcntl(flooder.descriptor, F_SETFL, flags)
        #expect(sentCommands > 100)

        // The daemon is not stuck, and holds a bounded amount for the flooder.
        #expect(try other.request(#"{"cmd":"ping"}"#, reply: "pong").type == "pong")
        let counters = try harness.counters()
        #expect(counters.peakQueuedBytes <= limits.maxQueuedBytes)
        #expect(counters.disconnectedSlow == 0)

        // Reading now, it gets every answer.
        var answers = 0
        while answers < sentCommands {
            if try flooder.readMessage().type == "status" { answers += 1 }
        }
        #expect(answers == sentCommands)
        #expect(try flooder.request(#"{"cmd":"ping"}"#, reply: "pong").type == "pong")
    }
}
