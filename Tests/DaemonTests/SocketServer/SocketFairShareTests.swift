import BeacondTestSupport
import Foundation
import Logging
import NIOCore
import Testing

@testable import BeacondClient
@testable import BeacondCore

#if canImport(Glibc)
import Glibc
#endif

/// A full server still admits a client of another user, closing the longest-idle connection of
/// the user holding the most (docs/protocol.md, "Limits"; docs/security.md, "Local clients").
@Suite(.serialized) struct SocketFairShareTests {
    static let nobody: UInt32 = 65534

    @Test(
        .enabled(
            if: OtherUserClient.isAvailable,
            "needs root, /usr/bin/setpriv and /usr/bin/perl to connect as another user"))
    func otherUserIsAdmittedByClosingTheLongestIdleConnection() throws {
        let harness = try SocketHarness(maxClients: 8)
        defer { harness.close() }
        #expect(chmod(harness.path, 0o666) == 0)
        let clients = try (0..<8).map { _ in try harness.greetedClient() }
        // Every client but #5 sends a request: #5 is idle longest (#0 connected first, but spoke since).
        for (index, client) in clients.enumerated() where index != 5 {
            #expect(try client.request(#"{"cmd":"ping"}"#, reply: "pong").type == "pong")
        }

        let other = try OtherUserClient(path: harness.path, uid: Self.nobody)
        defer { other.stop() }
        let hello = try #require(other.readLine(timeout: 5), "the other user's client got nothing")
        #expect(hello.contains(#""type":"hello""#))

        let (bye, _) = try clients[5].read(until: "bye")
        #expect(
            bye["reason"] as? String == "server full: closing the longest-idle connection of the user holding "
                + "the most connections (8 of 8) to admit another user")
        #expect(clients[5].isClosedByServer())
        var counters = try harness.counters()
        #expect(counters.evictedClients == 1)
        #expect(counters.clients == 8)
        #expect(counters.rejectedClients == 0)
        for (index, client) in clients.enumerated() where index != 5 {
            #expect(try client.request(#"{"cmd":"ping"}"#, reply: "pong").type == "pong")
        }

        // The flooding user (7 of 8, still the most) gets no more places.
        let extra = try harness.connect()
        #expect(try extra.readMessage()["error"] as? String == "server full: 8 clients connected (max_clients)")
        #expect(extra.isClosedByServer())
        counters = try harness.counters()
        #expect(counters.rejectedClients == 1)
        #expect(counters.evictedClients == 1)
    }

    @Test func rosterPicksTheLongestIdleConnectionOfTheUserHoldingTheMost() throws {
        let harness = try SocketHarness(start: false)
        defer { harness.close() }
        let sessions = [1, 1, 2, 1, 2, 3].enumerated().map { index, uid in
            ClientSession(
                id: index + 1, uid: UInt32(uid), publisher: harness.publisher, status: harness.status,
                outbound: OutboundQueueHandler(
                    limits: ClientLimits(), counters: ServerCounters(),
                    logger: SocketHarness.quietLogger, logLimiter: LogRateLimiter()),
                limits: ClientLimits(), counters: ServerCounters(), logger: SocketHarness.quietLogger,
                logLimiter: LogRateLimiter())
        }
        var roster = ClientRoster()
        for session in sessions { roster.add(session) }
        #expect(roster.count == 6)
        #expect(roster.connections(of: 1) == 3)

        // uid 1 holds the most (3): a newcomer of uid 1 is refused, of anyone else admitted.
        #expect(roster.fairShareVictim(for: 1) == nil)
        #expect(roster.fairShareVictim(for: 4)?.id == 1)
        #expect(roster.fairShareVictim(for: 2)?.id == 1)

        // Client 1 spoke last: client 2 is now uid 1's longest idle.
        sessions[0].lastActivity = sessions[5].lastActivity + 1
        #expect(roster.fairShareVictim(for: 3)?.id == 2)

        // Equal shares: nobody with as many as the most may take a place.
        roster.remove(id: 1)
        #expect(roster.connections(of: 1) == 2)
        #expect(roster.fairShareVictim(for: 2) == nil)
        #expect(roster.fairShareVictim(for: 3)?.id == 2)
        #expect(roster.remove(id: 1) == nil)
        #expect(roster.count == 5)
    }
}

/// A client of the daemon's socket run as another user: `setpriv` drops to `uid`, and a few
/// lines of Perl connect and copy every line from the daemon to stdout.
final class OtherUserClient {
    static let setpriv = "/usr/bin/setpriv"
    static let perl = "/usr/bin/perl"
    static let script = """
        use strict; use IO::Socket::UNIX; $| = 1;
        my $socket = IO::Socket::UNIX->new(Peer => $ARGV[0]) or die "connect $ARGV[0]: $!\\n";
        while (my $line = <$socket>) { print $line; }
        """

    static var isAvailable: Bool {
        getuid() == 0 && FileManager.default.isExecutableFile(atPath: setpriv)
            && FileManager.default.isExecutableFile(atPath: perl)
    }

    private let process = Process()
    private let output = Pipe()
    private var buffer: [UInt8] = []

    init(path: String, uid: UInt32) throws {
        process.executableURL = URL(fileURLWithPath: Self.setpriv)
        process.arguments = [
            "--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", "--", Self.perl, "-e", Self.script,
            path,
        ]
        process.standardOutput = output
        try process.run()
    }

    /// The next line the client received, without its "\n"; nil on timeout or end of output.
    func readLine(timeout: Double) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        let fd = output.fileHandleForReading.fileDescriptor
        while true {
            if let newline = buffer.firstIndex(of: 0x0A) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            let left = Int32(max(0, deadline.timeIntervalSinceNow * 1000))
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard left > 0, poll(&descriptor, 1, left) > 0 else { return nil }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard count > 0 else { return nil }
            buffer += chunk[..<count]
        }
    }

    /// Kills the client. SIGKILL: a child spawned from a test thread may inherit a mask that blocks SIGTERM.
    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        _ = blockingWaitUntil(within: 5) { !process.isRunning }
    }
}
