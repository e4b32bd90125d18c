import BLEPayload
import BeacondTestSupport
import CLinux
import CircuitState
import Foundation
import Logging
import NIOCore
import NIOPosix
import Testing

@testable import BeacondClient
@testable import BeacondCore

#if canImport(Glibc)
import Glibc
#endif

/// An engine clock the socket tests move by hand; timers never fire by themselves.
final class SocketTestClock: EngineClock, @unchecked Sendable {
    var time: Int64

    init(_ time: Int64) { self.time = time }

    func now() -> Int64 { time }
    func realDelay(until time: Int64) -> TimeAmount? { .hours(1) }
}

extension ClientLimits {
    /// Limits that give a backed-up client 30 s to catch up, longer than a test takes.
    static var patient: ClientLimits {
        var limits = ClientLimits()
        limits.slowClientTimeout = .seconds(30)
        return limits
    }
}

/// A real `TrackStateServer` on a temporary socket path, with a hub on a manual clock.
final class SocketHarness: @unchecked Sendable {
    static let second: Int64 = 1_000_000

    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let clock = SocketTestClock(1_000 * SocketHarness.second)
    let hub: TrackStateHub
    let publisher: TrackStatePublisher
    let status: StatusBoard
    let server: TrackStateServer
    let path: String
    private var scannerUp = false

    /// A fresh path under /tmp, short enough for sun_path.
    static func temporaryPath() -> String {
        "/tmp/beacond-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
    }

    static var quietLogger: Logger {
        var logger = Logger(label: "beacond.test")
        logger.logLevel = .critical
        return logger
    }

    init(
        path: String = SocketHarness.temporaryPath(), maxClients: Int = 1024, limits: ClientLimits = ClientLimits(),
        inheritedDescriptor: CInt? = nil, start: Bool = true
    ) throws {
        self.path = path
        let hub = TrackStateHub(
            eventLoop: group.next(), configuration: FusionConfiguration(), clock: clock,
            backend: "test", logger: Self.quietLogger)
        self.hub = hub
        publisher = TrackStatePublisher(connectedTo: hub)
        status = StatusBoard(hub: hub)
        server = TrackStateServer(
            publisher: publisher, status: status, path: path, maxClients: maxClients,
            inheritedDescriptor: inheritedDescriptor,
            limits: limits, logger: Self.quietLogger)
        try onLoop { self.hub.start(checkClockEvery: nil) }
        if start { try server.start().wait() }
    }

    /// Shuts the server and the loop down, and removes the socket file if it is still there.
    func close() {
        try? server.shutdown().wait()
        try? onLoop { self.hub.stop() }
        try? group.syncShutdownGracefully()
        if server.inheritedDescriptor == nil { unlink(path) }
    }

    /// Runs `body` on the hub's event loop and waits for it.
    func onLoop<T: Sendable>(_ body: @escaping @Sendable () throws -> T) throws -> T {
        try hub.eventLoop.submit(body).wait()
    }

    func connect() throws -> TrackStateClient {
        try TrackStateClient(path: path)
    }

    /// A client that has read hello and the first state.
    func greetedClient() throws -> TrackStateClient {
        let client = try connect()
        _ = try client.handshake()
        return client
    }

    var seq: Int { (try? onLoop { self.hub.seq }) ?? -1 }

    /// One frame from beacon `address`; `rssi` -127 is below every `min_rssi`: heard, but not an override.
    func ingest(zone: UInt16, mode: GeoRacingMode, sequence: UInt16 = 1, address: UInt64, rssi: Int8 = -60) throws {
        try onLoop {
            self.hub.ingest(
                .circuit(zone: zone, mode: mode, sequence: sequence), address: BluetoothAddress(rawValue: address),
                rssi: rssi, txPower: nil)
        }
    }

    /// Flips the scanner state: exactly one published state change, on the loop.
    func toggleScannerOnLoop() {
        scannerUp.toggle()
        hub.setScanner(scannerUp ? .up : .down)
    }

    /// Toggles the scanner `changes` times in one go on the loop, then reads `client`'s states up
    /// to the last change's, expecting their seqs to rise without a repeat. Returns the seqs read
    /// and the last change's seq.
    func toggleScanner(
        _ changes: Int, readingStatesWith client: TrackStateClient, sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> (seqs: [Int], finalSeq: Int) {
        try onLoop {
            for _ in 0..<changes { self.toggleScannerOnLoop() }
        }
        let finalSeq = seq
        var seqs: [Int] = []
        while seqs.last != finalSeq {
            let message = try client.readMessage()
            if message.type == "state", let seq = message["seq"] as? Int { seqs.append(seq) }
        }
        #expect(seqs == seqs.sorted() && Set(seqs).count == seqs.count, sourceLocation: sourceLocation)
        return (seqs, finalSeq)
    }

    struct Counters: Sendable {
        var clients, accepted, rejectedClients, droppedLines, coalescedStates, disconnectedSlow, disconnectedAbuse,
            errors, peakQueuedLines, peakQueuedBytes, evictedClients, refusedStatus, queuedBytes: Int
    }

    func counters() throws -> Counters {
        try onLoop {
            let c = self.server.counters
            return Counters(
                clients: c.clients, accepted: c.accepted, rejectedClients: c.rejectedClients,
                droppedLines: c.droppedLines, coalescedStates: c.coalescedStates,
                disconnectedSlow: c.disconnectedSlow, disconnectedAbuse: c.disconnectedAbuse,
                errors: c.errors, peakQueuedLines: c.peakQueuedLines,
                peakQueuedBytes: c.peakQueuedBytes, evictedClients: c.evictedClients,
                refusedStatus: c.refusedStatus, queuedBytes: self.server.queuedBytes)
        }
    }

    /// Polls `condition` (on the test thread) until it holds or `timeout` seconds pass; its
    /// first error ends the wait and is thrown.
    func eventually(timeout: Double = 3, _ condition: () throws -> Bool) throws -> Bool {
        var failure: (any Error)?
        let held = blockingWaitUntil(within: timeout) {
            do {
                return try condition()
            } catch {
                failure = error
                return true
            }
        }
        if let failure { throw failure }
        return held
    }
}

extension TrackStateClient {
    /// Reads messages until one of `type` arrives; the ones before it are returned too.
    func read(until type: String, timeout: Double = 5) throws -> (found: Message, before: [Message]) {
        var before: [Message] = []
        while true {
            let message = try readMessage(timeout: timeout)
            if message.type == type { return (message, before) }
            before.append(message)
        }
    }

    /// True when the daemon has closed the connection (after any lines still buffered).
    func isClosedByServer(timeout: Double = 3) -> Bool {
        do {
            while true { _ = try readLine(timeout: timeout) }
        } catch {
            return error.isClosed
        }
    }
}

/// A Unix socket bound at `path` by hand (optionally listening), outside any server.
func bindUnixSocket(at path: String, listen shouldListen: Bool) throws -> CInt {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw POSIXFailure(call: "socket", code: errno) }
    let result = UnixSocketPath(path).withAddress { bind(fd, $0, $1) }
    guard result == 0 else {
        let code = errno
        Glibc.close(fd)
        throw POSIXFailure(call: "bind", code: code)
    }
    if shouldListen, listen(fd, 128) != 0 {
        let code = errno
        Glibc.close(fd)
        throw POSIXFailure(call: "listen", code: code)
    }
    return fd
}

struct POSIXFailure: Error {
    let call: String
    let code: Int32
}

func fileMode(_ path: String) -> mode_t? {
    var info = stat()
    guard lstat(path, &info) == 0 else { return nil }
    return info.st_mode
}
