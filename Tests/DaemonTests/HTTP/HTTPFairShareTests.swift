import BeacondTestSupport
import CLinux
import Foundation
import NIOCore
import NIOEmbedded
import Testing

@testable import BeacondClient
@testable import BeacondCore

#if canImport(Glibc)
import Glibc
#endif

/// Issue 25, item 4: the HTTP listeners' places shared per peer (`SmallHTTPConnections`,
/// `WebKioskHub.register`, `HTTPPeer`), and the back-off when descriptors run out
/// (`AcceptBackoffHandler`).
@Suite struct HTTPFairShareTests {
    /// One user (root, this process) holds all 64 streams; a browser of another user (nobody,
    /// curl under setpriv) still gets its stream: the oldest of root's is closed for it. Root's
    /// next stream is refused: it holds the most.
    @Test func anotherUsersStreamGetsInWhileOneUserHoldsEveryStream() throws {
        guard OtherUserCommand.isAvailable else {
            print("skipped: needs root, setpriv and curl to run a client as another user")
            return
        }
        let directory = try TemporaryDirectory(short: true)
        let harness = try WebKioskHarness(socketPath: directory.file("absent.sock"))
        defer { harness.close() }
        var streams: [HTTPTestConnection] = []
        defer { for stream in streams { stream.close() } }
        for _ in 0..<64 {
            let stream = try harness.connect()
            stream.send("GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            #expect(try stream.readHead().status == 200)
            streams.append(stream)
        }
        #expect(harness.counters.streams == 64)
        let output = try OtherUserCommand.curl(
            uid: 65534, ["-s", "-N", "--max-time", "2", "http://127.0.0.1:\(harness.port)/events"])
        #expect(output.contains("data: {\"flag\":\"no_signal\""), "nobody's stream: \(output.prefix(200))")
        let counters = harness.counters
        #expect(counters.evictedStreams == 1 && counters.refusedStreams == 0)
        // The oldest stream (root's first) was the one closed.
        #expect(throws: HTTPTestError.self) { while true { _ = try streams[0].readEvent(timeout: 3) } }
        #expect(try streams[63].readEvent().contains("no_signal"))
        // Curl has gone: root takes the free place, and then, holding all 64, is refused.
        #expect(blockingWaitUntil { harness.counters.streams == 63 })
        let last = try harness.connect()
        defer { last.close() }
        last.send("GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        #expect(try last.readHead().status == 200)
        let extra = try harness.connect()
        defer { extra.close() }
        extra.send("GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        #expect(try extra.readResponse().status == 503)
        #expect(harness.counters.refusedStreams == 1)
    }

    /// The kernel names a loopback peer's user; a peer elsewhere is its address.
    @Test func aLoopbackPeerIsItsUserFromTheKernel() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && listen(listener, 4) == 0
                    && getsockname(listener, $0, &length) == 0
            }
        }
        try #require(bound)
        let port = Int(UInt16(bigEndian: address.sin_port))
        let client = try #require(TCPTestClient.connect(port: port))
        defer { close(client) }
        let accepted = accept(listener, nil, nil)
        defer { close(accepted) }
        let local = try SocketAddress(ipAddress: "127.0.0.1", port: port)
        var peer = sockaddr_in()
        var peerLength = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &peer) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(client, $0, &peerLength) }
        }
        let remote = try SocketAddress(ipAddress: "127.0.0.1", port: Int(UInt16(bigEndian: peer.sin_port)))
        #expect(HTTPPeer.of(local: local, remote: remote) == .user(getuid()))
        // No such socket (the port is nobody's): unknown, never someone else.
        let gone = try SocketAddress(ipAddress: "127.0.0.1", port: 1)
        #expect(HTTPPeer.of(local: local, remote: gone) == .unknown)
        let far = try SocketAddress(ipAddress: "192.0.2.7", port: 40000)
        #expect(HTTPPeer.of(local: local, remote: far) == .address("192.0.2.7"))
    }

    /// The table's line for the peer's socket is the one whose local end is the peer's: not our
    /// accepted socket's (the same ends the other way round, owned by the daemon), and not the
    /// listener's. IPv6 addresses as the kernel writes them, word by word in this machine's order.
    @Test func theOwnerIsReadFromThePeersOwnLineOfTheTable() throws {
        let ours = try SocketAddress(ipAddress: "::1", port: 8088)
        let theirs = try SocketAddress(ipAddress: "::1", port: 40000)
        let query = try #require(TCPConnectionQuery(local: ours, remote: theirs))
        let loopback = "00000000000000000000000001000000"
        #expect(query.tableColumns == (peer: "\(loopback):9C40", local: "\(loopback):1F98"))
        let table = """
              sl  local_address                         remote_address                        st tx_queue rx_queue \
            tr tm->when retrnsmt   uid  timeout inode
               0: \(loopback):1F98 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 \
            00000000   995        0 4240 1 0000000000000000 100 0 0 10 0
               1: \(loopback):1F98 \(loopback):9C40 01 00000000:00000000 00:00000000 00000000   995        0 \
            4241 1 0000000000000000 20 4 30 10 -1
               2: \(loopback):9C40 \(loopback):1F98 01 00000000:00000000 00:00000000 00000000  1000        0 \
            4242 1 0000000000000000 20 4 30 10 -1

            """
        #expect(TCPSocketTable.ownerUID(in: Array(table.utf8), query.tableColumns) == 1000)
        // Read from a directory as /proc/self/net: one read answers for a second, unless the
        // connection asked about is not in it.
        let directory = try TemporaryDirectory()
        try table.write(toFile: directory.file("tcp6"), atomically: true, encoding: .utf8)
        let socketTable = TCPSocketTable(directory: directory.path)
        #expect(socketTable.ownerUID(query, now: 5_000_000) == 1000 && socketTable.reads == 1)
        #expect(socketTable.ownerUID(query, now: 5_900_000) == 1000 && socketTable.reads == 1)
        #expect(socketTable.ownerUID(query, now: 6_000_000) == 1000 && socketTable.reads == 2)
        let gone = try #require(
            TCPConnectionQuery(local: ours, remote: try SocketAddress(ipAddress: "::1", port: 40001)))
        #expect(TCPSocketTable.ownerUID(in: Array(table.utf8), gone.tableColumns) == nil)
        #expect(socketTable.ownerUID(gone, now: 6_100_000) == nil && socketTable.reads == 3)
        let v4 = try #require(
            TCPConnectionQuery(
                local: try SocketAddress(ipAddress: "::ffff:127.0.0.1", port: 9464),
                remote: try SocketAddress(ipAddress: "::ffff:127.0.0.1", port: 50000)))
        #expect(v4.family == UInt8(AF_INET) && v4.tableColumns == (peer: "0100007F:C350", local: "0100007F:24F8"))
    }

    /// A listener's table on an embedded loop, logging to nowhere, with its own log limiter.
    static func table(on loop: EmbeddedEventLoop, maxConnections: Int) -> SmallHTTPConnections {
        SmallHTTPConnections(
            name: "test", eventLoop: loop, maxConnections: maxConnections, logger: .init(label: "test"),
            logLimiter: LogRateLimiter())
    }

    /// Connections of two remote peers (by address) on an embedded loop.
    static func admit(_ table: SmallHTTPConnections, from address: String, port: Int) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel(loop: table.eventLoop as! EmbeddedEventLoop)
        channel.localAddress = try SocketAddress(ipAddress: "192.0.2.1", port: 80)
        try channel.connect(to: SocketAddress(ipAddress: address, port: port)).wait()
        _ = table.admit(channel)
        return channel
    }

    @Test func aFullListenerClosesTheLongestIdleConnectionOfThePeerHoldingTheMost() throws {
        let loop = EmbeddedEventLoop()
        let table = Self.table(on: loop, maxConnections: 4)
        let first = try (0..<3).map { try Self.admit(table, from: "192.0.2.10", port: 1000 + $0) }
        let other = try Self.admit(table, from: "192.0.2.20", port: 2000)
        #expect(table.count == 4)
        // The peer holding the most is refused; another peer takes its longest-idle place.
        let refused = try Self.admit(table, from: "192.0.2.10", port: 1100)
        #expect(!refused.isActive && table.counters.refused == 1)
        let third = try Self.admit(table, from: "192.0.2.30", port: 3000)
        loop.run()
        #expect(third.isActive && !first[0].isActive && first[1].isActive && other.isActive)
        #expect(table.counters.evicted == 1 && table.count == 4)
        #expect(table.connections(of: .address("192.0.2.10")) == 2)
    }

    /// EMFILE on the listener: accepting stops (autoRead off) and starts again from a task on the
    /// loop after 50 ms, then 100 ms…; the cap drops below the connections open, closing the
    /// top holder's longest-idle ones; other errors pass on untouched.
    @Test func runningOutOfDescriptorsPausesAcceptingAndMakesRoom() throws {
        let loop = EmbeddedEventLoop()
        let table = Self.table(on: loop, maxConnections: 100)
        let many = try (0..<20).map { try Self.admit(table, from: "192.0.2.10", port: 1000 + $0) }
        let one = try Self.admit(table, from: "192.0.2.20", port: 2000)
        let server = EmbeddedChannel(handler: AcceptBackoffHandler(connections: table), loop: loop)
        func autoRead() -> Bool? {
            server.options.last { $0.option is ChannelOptions.Types.AutoReadOption }?.value as? Bool
        }
        server.pipeline.fireErrorCaught(IOError(errnoCode: EMFILE, reason: "accept"))
        #expect(autoRead() == false)
        #expect(table.counters.acceptErrors == 1 && table.cap == 19)
        loop.run()
        #expect(table.count == 19 && one.isActive && !many[0].isActive && !many[1].isActive)
        loop.advanceTime(by: .milliseconds(49))
        #expect(autoRead() == false)
        loop.advanceTime(by: .milliseconds(1))
        #expect(autoRead() == true)
        // Again: twice as long.
        server.pipeline.fireErrorCaught(IOError(errnoCode: ENFILE, reason: "accept"))
        loop.advanceTime(by: .milliseconds(99))
        #expect(autoRead() == false)
        loop.advanceTime(by: .milliseconds(1))
        #expect(autoRead() == true)
        // Anything else is not ours to handle.
        server.pipeline.fireErrorCaught(IOError(errnoCode: ECONNABORTED, reason: "accept"))
        #expect(autoRead() == true && table.counters.acceptErrors == 2)
        #expect(throws: IOError.self) { try server.throwIfErrorCaught() }
    }
}
