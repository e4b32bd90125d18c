import Glibc
import NIOCore
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// The publisher's direct path (`OutboundQueueHandler.writeDirectly`): lines go straight to an
/// idle client's socket, and whatever the socket does not take (a partial write, EAGAIN) goes the
/// usual way, in order, with nothing lost or repeated. The socket's send buffer is shrunk to the
/// kernel's minimum so that a client that does not read fills it after a few kilobytes.
@Suite(.serialized) struct SocketDirectWriteTests {
    /// A line of exactly `size` bytes with its "\n", tagged so the reader can tell lines apart.
    static func line(_ tag: Int, size: Int = 100) -> [UInt8] {
        let head = Array("{\"type\":\"test\",\"n\":\(tag),\"pad\":\"".utf8)
        let tail = Array("\"}\n".utf8)
        let padding = max(0, size - head.count - tail.count)
        return head + [UInt8](repeating: UInt8(ascii: "a") + UInt8(tag % 26), count: padding) + tail
    }

    /// The only client's session; call on the hub's loop.
    static func session(_ harness: SocketHarness) -> ClientSession? {
        harness.server.roster.sessions.count == 1 ? harness.server.roster.sessions.values.first : nil
    }

    /// True when the only client has its direct path open and its SO_SNDBUF set to the kernel's minimum.
    static func shrinkSendBuffer(_ harness: SocketHarness) throws -> Bool {
        try harness.onLoop {
            guard let descriptor = session(harness)?.outbound.directDescriptor else { return false }
            var size: Int32 = 1
            return setsockopt(descriptor, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size)) == 0
        }
    }

    /// The only client, greeted, its send buffer shrunk (expected), and the direct counters then.
    static func greetedClientWithTheSmallestSendBuffer(
        _ harness: SocketHarness, sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> (TrackStateClient, Direct) {
        let client = try harness.greetedClient()
        #expect(try shrinkSendBuffer(harness), sourceLocation: sourceLocation)
        return (client, try direct(harness))
    }

    /// Delivers `lines` as state lines to the only client, on the loop.
    static func deliver(_ lines: [[UInt8]], _ harness: SocketHarness) throws {
        try harness.onLoop {
            for line in lines { session(harness)?.deliver(state: ByteBuffer(bytes: line)) }
        }
    }

    struct Direct: Equatable {
        var whole: Int, partial: Int, refused: Int
    }

    static func direct(_ harness: SocketHarness) throws -> Direct {
        try harness.onLoop {
            let counters = harness.server.counters
            return Direct(
                whole: counters.directWrites, partial: counters.directPartialWrites, refused: counters.directRefused)
        }
    }

    @Test func statesReachAnIdleClientThroughTheDirectPath() throws {
        let harness = try SocketHarness()
        defer { harness.close() }
        let kiosk = try harness.greetedClient()
        let before = try Self.direct(harness)
        for _ in 0..<5 {
            let seq = harness.seq
            try harness.onLoop { harness.toggleScannerOnLoop() }
            let state = try kiosk.read(until: "state").found
            #expect(state["seq"] as? Int == seq + 1)
        }
        let after = try Self.direct(harness)
        #expect(after.whole - before.whole == 5)
        #expect(after.partial == before.partial && after.refused == before.refused)
    }

    /// A line longer than the socket takes: the first part goes directly, the rest through the
    /// channel, and the lines after it wait behind it in the channel (it stays under its high
    /// water mark, so nothing coalesces) until it is out.
    @Test func aPartialDirectWriteSendsTheRestThroughTheChannelFirst() throws {
        let harness = try SocketHarness()
        defer { harness.close() }
        let (kiosk, before) = try Self.greetedClientWithTheSmallestSendBuffer(harness)
        let lines = [Self.line(1, size: 20_000), Self.line(2), Self.line(3)]
        try Self.deliver(lines, harness)
        let during = try Self.direct(harness)
        #expect(during.partial - before.partial == 1)
        #expect(during.whole == before.whole && during.refused == before.refused)
        for line in lines {
            #expect(try kiosk.readLine() + [UInt8(ascii: "\n")] == line)
        }
        // Once the channel has written it all, the next line goes directly again.
        let last = Self.line(4)
        try Self.deliver([last], harness)
        #expect(try kiosk.readLine() + [UInt8(ascii: "\n")] == last)
        #expect(try Self.direct(harness).whole - during.whole == 1)
    }

    /// Short lines until the socket is full: the first one it refuses (EAGAIN) and the ones after
    /// it go through the channel, in order; after the client catches up, directly again.
    @Test func aDirectWriteRefusedWithEAGAINFallsBackToTheChannel() throws {
        let harness = try SocketHarness()
        defer { harness.close() }
        let (kiosk, before) = try Self.greetedClientWithTheSmallestSendBuffer(harness)
        let written = try harness.onLoop { () -> Int in
            guard let session = Self.session(harness) else { return 0 }
            var tag = 0
            while tag < 1_000, harness.server.counters.directRefused == before.refused {
                session.deliver(state: ByteBuffer(bytes: Self.line(tag)))
                tag += 1
            }
            for extra in tag..<tag + 3 { session.deliver(state: ByteBuffer(bytes: Self.line(extra))) }
            return tag + 3
        }
        #expect(written > 4)
        let during = try Self.direct(harness)
        #expect(during.refused - before.refused == 1)
        #expect(during.partial == before.partial)
        #expect(during.whole - before.whole == written - 4)
        for tag in 0..<written {
            #expect(try kiosk.readLine() + [UInt8(ascii: "\n")] == Self.line(tag))
        }
        let counters = try harness.counters()
        #expect(counters.coalescedStates == 0 && counters.disconnectedSlow == 0)
        try Self.deliver([Self.line(written)], harness)
        #expect(try kiosk.readLine() + [UInt8(ascii: "\n")] == Self.line(written))
        #expect(try Self.direct(harness).whole - during.whole == 1)
    }

    /// A client with a queued line (backed up past the channel's high water mark) never gets a
    /// direct write ahead of it: states coalesce in its queue as before.
    @Test func aBackedUpClientsQueueIsNeverOvertaken() throws {
        let harness = try SocketHarness(limits: .patient)
        defer { harness.close() }
        let kiosk = try harness.greetedClient()
        #expect(try Self.shrinkSendBuffer(harness))
        let firstSeq = harness.seq
        let (seqs, finalSeq) = try harness.toggleScanner(2_000, readingStatesWith: kiosk)
        let counters = try harness.counters()
        #expect(counters.coalescedStates > 0)
        #expect(counters.coalescedStates + seqs.count == finalSeq - firstSeq)
        #expect(try Self.direct(harness).refused <= 1)
    }
}
