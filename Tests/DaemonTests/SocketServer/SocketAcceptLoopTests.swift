import CLinux
import Foundation
import Glibc
import Synchronization
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// `SocketAcceptLoop` on its own: it hands over every pending connection with the peer's uid, and
/// `stop()` ends it at once, whether it waits for a connection or backs off.
@Suite struct SocketAcceptLoopTests {
    /// A listening Unix socket in a fresh directory.
    static func listener() throws -> (descriptor: CInt, path: String) {
        let path = NSTemporaryDirectory() + "accept-\(UUID().uuidString.prefix(8)).sock"
        let descriptor = try UnixSocketPath(path).bindListening(backlog: 64)
        return (descriptor, path)
    }

    static func connect(_ path: String) -> CInt {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        _ = UnixSocketPath(path).withAddress { Glibc.connect(fd, $0, $1) }
        return fd
    }

    @Test func everyPendingConnectionIsHandedOverWithItsPeersUID() async throws {
        let (listener, path) = try Self.listener()
        defer {
            close(listener)
            UnixSocketPath(path).unlink()
        }
        let clients = (0..<5).map { _ in Self.connect(path) }
        defer { for fd in clients { close(fd) } }
        let acceptLoop = try SocketAcceptLoop(listener: listener)
        let accepted = Mutex<[SocketAcceptLoop.Connection]>([])
        let thread = try PosixThread.start(detached: false) {
            try? acceptLoop.run(
                accepted: { batch in
                    accepted.withLock { $0 += batch }
                    if accepted.withLock({ $0.count }) == 5 { acceptLoop.stop() }
                },
                exhausted: { _, _ in })
        }
        thread.join()
        let connections = accepted.withLock { $0 }
        #expect(connections.count == 5)
        #expect(connections.allSatisfy { $0.uid == getuid() && $0.descriptor >= 0 })
        for connection in connections {
            #expect(fcntl(connection.descriptor, F_GETFL) & O_NONBLOCK != 0)
            #expect(fcntl(connection.descriptor, F_GETFD) & FD_CLOEXEC != 0)
            close(connection.descriptor)
        }
    }

    @Test func stopEndsTheLoopWhileItWaits() throws {
        let (listener, path) = try Self.listener()
        defer {
            close(listener)
            UnixSocketPath(path).unlink()
        }
        let acceptLoop = try SocketAcceptLoop(listener: listener)
        let ended = Atomic<Bool>(false)
        let thread = try PosixThread.start(detached: false) {
            try? acceptLoop.run(accepted: { _ in }, exhausted: { _, _ in })
            ended.store(true, ordering: .releasing)
        }
        let started = MonotonicClock.micros()
        acceptLoop.stop()
        thread.join()
        let hasEnded = ended.load(ordering: .acquiring)
        #expect(hasEnded)
        #expect(MonotonicClock.micros() - started < 1_000_000)
    }

    /// A listener that is not one (a closed descriptor's number) is a failure, not a busy loop.
    @Test func aBrokenListenerEndsTheLoopWithAnError() throws {
        let (listener, path) = try Self.listener()
        UnixSocketPath(path).unlink()
        let notListening = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        defer {
            close(listener)
            close(notListening)
        }
        // poll(2) reports a socket that never listened as readable (POLLHUP); accept4 then fails with EINVAL.
        let acceptLoop = try SocketAcceptLoop(listener: notListening)
        #expect(throws: SocketAcceptLoop.Failure.self) {
            try acceptLoop.run(accepted: { _ in }, exhausted: { _, _ in })
        }
    }

    /// EMFILE pauses accepting for 50 ms, then 100 ms while it goes on, back to 50 ms after a
    /// success; each is reported; `stop()` during a back-off ends the loop at once.
    @Test func runningOutOfDescriptorsBacksOffAndStopStillEndsIt() throws {
        let (listener, path) = try Self.listener()
        defer {
            close(listener)
            UnixSocketPath(path).unlink()
        }
        let client = Self.connect(path)
        defer { close(client) }
        // Fails with EMFILE twice, then accepts for real, then fails with EMFILE for good.
        let calls = Atomic<Int>(0)
        let acceptLoop = try SocketAcceptLoop(listener: listener) { fd in
            let call = calls.add(1, ordering: .relaxed).newValue
            if call == 3 { return accept(fd, nil, nil) }
            errno = EMFILE
            return -1
        }
        let reports = Mutex<[(code: CInt, delay: Int32, at: Int64)]>([])
        let accepted = Atomic<Int>(0)
        let reported = DispatchSemaphore(value: 0)
        let started = MonotonicClock.micros()
        let thread = try PosixThread.start(detached: false) {
            try? acceptLoop.run(
                accepted: { batch in
                    accepted.add(batch.count, ordering: .relaxed)
                    for connection in batch { close(connection.descriptor) }
                },
                exhausted: { code, delay in
                    reports.withLock { $0.append((code, delay, MonotonicClock.micros() - started)) }
                    reported.signal()
                })
        }
        // Two back-offs (50 + 100 ms), the accept, then a failure that waits 50 ms again: the loop
        // waits in poll(2) meanwhile. Another connection makes it try again.
        let second = Self.connect(path)
        defer { close(second) }
        for _ in 0..<3 { #expect(reported.wait(timeout: .now() + 5) == .success) }
        let stopAsked = MonotonicClock.micros()
        acceptLoop.stop()
        thread.join()
        #expect(MonotonicClock.micros() - stopAsked < 500_000)
        let seen = reports.withLock { $0 }
        #expect(seen.map(\.code) == [EMFILE, EMFILE, EMFILE])
        #expect(seen.map(\.delay) == [50, 100, 50])
        let acceptedCount = accepted.load(ordering: .relaxed)
        #expect(acceptedCount == 1)
        // The second failure came only after the first back-off had run out.
        #expect(seen.count == 3 && seen[1].at - seen[0].at >= 45_000)
    }
}

/// How many clients the socket serves within an open-file limit.
@Suite struct SocketClientCapTests {
    @Test(arguments: [
        (1024, 65536, 30, 1024), (1024, 20000, 30, 1024), (1024, 1024, 30, 433), (1024, 64, 20, 14),
        (1024, 64, 40, 4), (1024, 40, 20, 2), (1024, 10, 5, 1), (1024, -1, 30, 1024), (8, 64, 20, 8),
        (0, 64, 20, 0),
    ])
    func clientsLeaveRoomForTheDaemonsOwnFiles(maxClients: Int, descriptorLimit: Int, open: Int, cap: Int) {
        let computed = TrackStateServer.clientCap(
            maxClients: maxClients, descriptorLimit: descriptorLimit, openDescriptors: open)
        #expect(computed == cap)
    }

    /// Listed on a directory of its own: /proc/self/fd changes under tests running in parallel.
    /// Names are read in place, the longest (255 bytes) too.
    @Test func theEntriesOfADirectoryAreListed() throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("fd-count-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(DirectoryEntries.list(directory.path)?.isEmpty == true)
        let long = String(repeating: "é", count: 127) + "x"
        for name in ["0", "1", "2", ".hidden", "...", long] {
            try Data().write(to: directory.appendingPathComponent(name))
        }
        let names = try #require(DirectoryEntries.list(directory.path)).map(\.name).sorted()
        #expect(names == ["...", ".hidden", "0", "1", "2", long])
        #expect(DirectoryEntries.list(directory.path)?.allSatisfy { $0.type == UInt8(DT_REG) } == true)
        #expect(DirectoryEntries.list(directory.path + "/missing") == nil)
        #expect(TrackStateServer.openDescriptorCount() >= 3)
    }
}
