import BeacondCore
import BeacondTestSupport
import Foundation

/// What the fault-injection tests measure on a running `beacond run` (its memory is
/// `DaemonProcess.memory` or `ProcessFigures.residentKilobytes`): how fast it answers `status`, and
/// what its log says.
enum FaultProbe {
    /// A btsnoop capture with no record: `--backend replay` on it (`--speed 1`, so the engine clock
    /// runs in real time after the replay and the remote goes stale) hears no beacon at all, so the
    /// published state is race control's alone.
    static let emptyCapture: String = {
        let path = BeacondProcess.temporaryFile("empty.btsnoop")
        var header = Array("btsnoop\0".utf8)
        header += [0, 0, 0, 1, 0, 0, 0x03, 0xEA]
        try? Data(header).write(to: URL(fileURLWithPath: path))
        return path
    }()

    /// One `{"cmd":"status"}` over a fresh connection, as `beacond status` does it: the reply and the
    /// milliseconds from connecting to the reply.
    static func statusRoundTrip(_ socket: String) -> (status: [String: Any], ms: Double)? {
        let started = MonotonicClock.micros()
        guard let client = try? LineClient(path: socket) else { return nil }
        client.send(#"{"cmd":"status"}"#)
        guard let status = client.next(type: "status") else { return nil }
        return (status, Double(MonotonicClock.micros() - started) / 1000)
    }

    /// The fastest of three status round trips, ms, and the slowest. The 100 ms bound is checked on
    /// the fastest: on a loaded shared machine one sample can be descheduled, while a daemon that
    /// stalls makes all three slow.
    static func statusTiming(_ socket: String) -> (best: Double, worst: Double)? {
        let times = (0..<3).compactMap { _ in statusRoundTrip(socket)?.ms }
        guard let best = times.min(), let worst = times.max(), times.count == 3 else { return nil }
        return (best, worst)
    }

    /// `beacond status` (the real command): its exit status, output, and wall-clock milliseconds.
    static func statusCommand(_ socket: String) throws -> (result: BeacondProcess.Result, ms: Double) {
        let started = MonotonicClock.micros()
        let result = try BeacondProcess.run(["status", "--socket", socket])
        return (result, Double(MonotonicClock.micros() - started) / 1000)
    }

    /// The space-separated fields of a log line as a logfmt reader splits them: a double-quoted
    /// value, with backslash escapes, is one field whatever spaces it holds.
    static func logfmtFields(_ line: Substring) -> [String] {
        var fields: [String] = []
        var field = ""
        var quoted = false
        var escaped = false
        for character in line {
            if escaped {
                field.append(character)
                escaped = false
            } else if quoted && character == "\\" {
                escaped = true
            } else if character == "\"" {
                quoted.toggle()
            } else if character == " " && !quoted {
                if !field.isEmpty { fields.append(field) }
                field = ""
            } else {
                field.append(character)
            }
        }
        if !field.isEmpty { fields.append(field) }
        return fields
    }

    /// The log lines of `text` that contain `needle`.
    static func lines(_ text: String, containing needle: String) -> [Substring] {
        text.split(separator: "\n").filter { $0.contains(needle) }
    }
}

/// A Unix-socket client with plain system calls, for clients that misbehave on purpose.
final class RawClient: @unchecked Sendable {
    let fd: Int32

    /// Connects to `path`; `receiveTimeout` bounds each `read`.
    init(path: String, receiveTimeout: Int = 1) throws {
        fd = try UnixAddress.connectedSocket(to: path)
        var timeout = timeval(tv_sec: receiveTimeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    /// Writes all of `bytes` unless the daemon closes or stops reading (send timeout); the bytes sent.
    @discardableResult
    func send(_ bytes: [UInt8]) -> Int {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { break }
            sent += count
        }
        return sent
    }

    /// Writes `bytes` without blocking, reading (and dropping) what the daemon answers whenever its
    /// socket is full, until all is sent, the daemon closes, or `seconds` pass; the bytes sent.
    @discardableResult
    func sendDraining(_ bytes: [UInt8], within seconds: Double = 3) -> Int {
        let deadline = MonotonicClock.micros() + Int64(seconds * 1_000_000)
        var sent = 0
        var sink = [UInt8](repeating: 0, count: 64 * 1024)
        while sent < bytes.count && MonotonicClock.micros() < deadline {
            let flags = Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT)
            let count = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, flags) }
            if count > 0 {
                sent += count
                continue
            }
            guard errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR else { break }
            if recv(fd, &sink, sink.count, Int32(MSG_DONTWAIT)) == 0 { break }
            usleep(500)
        }
        return sent
    }

    /// One read: the bytes, [] at the end of the stream, nil when nothing came within the timeout.
    func read() -> [UInt8]? {
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        let count = Glibc.read(fd, &chunk, chunk.count)
        if count > 0 { return Array(chunk[0..<count]) }
        if count == 0 { return [] }
        return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? nil : []
    }

    /// Reads until the daemon closes the connection or `seconds` pass; whether it closed.
    func readToEnd(within seconds: Double) -> Bool {
        let deadline = MonotonicClock.micros() + Int64(seconds * 1_000_000)
        while MonotonicClock.micros() < deadline {
            if let bytes = read(), bytes.isEmpty { return true }
        }
        return false
    }

    func shutdownWrite() { shutdown(fd, Int32(SHUT_WR)) }
}

/// A well-behaved protocol client: a thread reads everything the daemon sends, as it arrives,
/// and keeps the `state` messages' seq and mode (and the last one whole), and whether the daemon
/// said `bye` or hung up.
final class WatchingClient: @unchecked Sendable {
    private let fd: Int32
    private let lock = NSLock()
    private var states: [(seq: Int, mode: String)] = []
    private var lastStateMessage: [String: Any]?
    private var replies: [[String: Any]] = []
    private var ended = false
    private var sawBye = false

    /// Connects to `path`, trying again for up to `connectWithin` seconds while the daemon does
    /// not listen yet; throws the last try's error.
    init(path: String, connectWithin seconds: Double = 0) throws {
        var connected: Int32?
        var lastError: any Error = POSIXError(.ECONNREFUSED)
        _ = blockingWaitUntil(within: seconds, intervalMicros: 20_000) {
            do { connected = try UnixAddress.connectedSocket(to: path) } catch { lastError = error }
            return connected != nil
        }
        guard let connected else { throw lastError }
        fd = connected
        Thread.detachNewThread { [self] in readLoop() }
    }

    deinit { close(fd) }

    private func readLoop() {
        var buffer = Data()
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = read(fd, &chunk, chunk.count)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            buffer.append(contentsOf: chunk[0..<count])
            while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = Data(buffer[buffer.startIndex..<newline])
                buffer.removeSubrange(buffer.startIndex...newline)
                guard let message = (try? JSONSerialization.jsonObject(with: line)) as? [String: Any] else { continue }
                lock.withLock {
                    switch message["type"] as? String {
                    case "state":
                        if let seq = message["seq"] as? Int, let mode = message["mode"] as? String {
                            states.append((seq, mode))
                            lastStateMessage = message
                        }
                    case "bye": sawBye = true
                    default: replies.append(message)
                    }
                }
            }
        }
        lock.withLock { ended = true }
    }

    func send(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }

    var receivedStates: [(seq: Int, mode: String)] { lock.withLock { states } }
    var latest: (seq: Int, mode: String)? { lock.withLock { states.last } }
    /// The last `state` message received, whole.
    var lastState: [String: Any]? { lock.withLock { lastStateMessage } }
    /// The remote message of the last state received.
    var lastMessage: String? { (lastState?["remote"] as? [String: Any])?["message"] as? String }
    var hungUp: Bool { lock.withLock { ended } }
    var saidBye: Bool { lock.withLock { sawBye } }
    var replyTypes: [String] { lock.withLock { replies.compactMap { $0["type"] as? String } } }

    /// Every seq greater than the one before.
    var seqOnlyIncreased: Bool {
        let seqs = receivedStates.map(\.seq)
        return zip(seqs, seqs.dropFirst()).allSatisfy { $0 < $1 }
    }

    /// Waits until the latest state received is `state` (from a status reply).
    func waitForLatest(_ state: (seq: Int, mode: String), timeout: Double = 5) -> Bool {
        blockingWaitUntil(within: timeout, intervalMicros: 5_000) {
            latest.map { $0.seq == state.seq && $0.mode == state.mode } ?? false
        }
    }

    /// Waits until the latest state received is the one `beacond status` reports (asked again on
    /// each try, as the state may still move).
    func waitForLatest(of daemon: DaemonProcess, timeout: Double = 5) -> Bool {
        statusAgreeingWithLatest(timeout: timeout, ask: daemon.quickStatus) != nil
    }

    /// As `waitForLatest(of:)`, with each status asked over a fresh connection without
    /// `quickStatus`'s 100 ms bound (for a daemon whose status is slower by design, as with the
    /// override table at its cap); the reply that agreed, or nil.
    func statusAgreeingWithLatest(socket: String, timeout: Double = 5) -> [String: Any]? {
        statusAgreeingWithLatest(timeout: timeout) { FaultProbe.statusRoundTrip(socket)?.status }
    }

    private func statusAgreeingWithLatest(timeout: Double, ask: () -> [String: Any]?) -> [String: Any]? {
        var agreeing: [String: Any]?
        _ = blockingWaitUntil(within: timeout, intervalMicros: 20_000) {
            guard let reply = ask(), let state = DaemonProcess.state(of: reply), let latest,
                latest.seq == state.seq && latest.mode == state.mode
            else { return false }
            agreeing = reply
            return true
        }
        return agreeing
    }

    /// Waits until the last state received carries the remote message `message`.
    func waitForMessage(_ message: String, timeout: Double = 5) -> Bool {
        blockingWaitUntil(within: timeout, intervalMicros: 20_000) { lastMessage == message }
    }

    /// Sends `ping` and waits for a `pong`; false when none came.
    func ping(timeout: Double = 5) -> Bool {
        let before = lock.withLock { replies.count }
        send(#"{"cmd":"ping"}"#)
        return blockingWaitUntil(within: timeout, intervalMicros: 5_000) {
            lock.withLock { replies.dropFirst(before).contains { $0["type"] as? String == "pong" } }
        }
    }
}
