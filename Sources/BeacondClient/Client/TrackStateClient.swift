import CLinux
import Foundation
import Glibc

/// A blocking client of the daemon's socket, protocol v1 (docs/protocol.md): connects, reads
/// newline-delimited JSON messages, sends commands. Used by `beacond status`, `watch` and
/// `kiosk`, and by the tests. One thread at a time.
package final class TrackStateClient {
    /// Where the daemon listens by default (`socket.path`).
    package static let defaultPath = "/run/beacond/beacond.sock"

    /// One message from the daemon.
    package struct Message {
        /// The `type` field ("" when missing).
        let type: String
        /// The whole object.
        package let object: [String: Any]
        /// The raw line, without its "\n".
        let line: [UInt8]

        package subscript(key: String) -> Any? { object[key] }
        package var text: String { String(decoding: line, as: UTF8.self) }

        /// The typed message (`ServerMessage`); throws `.unreadable` when the line does not
        /// match protocol v1's shape for its type.
        package func decoded(path: String = "") throws(ClientError) -> ServerMessage {
            do {
                return try ServerMessage(line: line)
            } catch {
                throw .unreadable(path: path, type: type, reason: Self.describe(error))
            }
        }

        /// The typed status reply; throws `.unreadable` when this is not one.
        package func status(path: String = "") throws(ClientError) -> StatusMessage {
            guard case .status(let status) = try decoded(path: path) else {
                throw .unreadable(path: path, type: type, reason: "not a status message")
            }
            return status
        }

        /// Where a decoding error is, in field names (`state.beacon.rssi`), and what it is.
        private static func describe(_ error: Error) -> String {
            let context: DecodingError.Context
            switch error as? DecodingError {
            case .typeMismatch(_, let found), .valueNotFound(_, let found), .dataCorrupted(let found):
                context = found
            case .keyNotFound(let key, let found):
                let path = (found.codingPath + [key]).map(\.stringValue).joined(separator: ".")
                return "missing \"\(path)\""
            default:
                return "\(error)"
            }
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            return "\"\(path)\": \(context.debugDescription)"
        }
    }

    package enum ClientError: Error, CustomStringConvertible {
        case invalidPath(SocketPathError)
        case cannotConnect(path: String, code: Int32)
        case timedOut(path: String, waiting: String)
        /// The daemon closed the connection.
        case closed(path: String)
        case io(path: String, code: Int32)
        case lineTooLong(path: String, limit: Int)
        case notJSON(path: String, line: String)
        /// The daemon answered a command with `{"type":"error"}`.
        case serverError(path: String, message: String)
        /// A message of a known `type` whose fields do not have protocol v1's shape.
        case unreadable(path: String, type: String, reason: String)

        /// The daemon closed the connection (a client may reconnect).
        var isClosed: Bool {
            if case .closed = self { return true }
            return false
        }

        package var description: String {
            switch self {
            case .invalidPath(let error):
                "\(error)"
            case .cannotConnect(let path, let code):
                switch code {
                case ENOENT: "cannot connect to \(path): no such socket (is beacond running?)"
                case ECONNREFUSED: "cannot connect to \(path): nobody is listening (is beacond running?)"
                case EACCES: "cannot connect to \(path): permission denied (are you in the beacond group?)"
                default: "cannot connect to \(path): \(errnoText(code))"
                }
            case .timedOut(let path, let waiting):
                "\(path): timed out waiting for \(waiting)"
            case .closed(let path):
                "\(path): the daemon closed the connection"
            case .io(let path, let code):
                "\(path): \(errnoText(code))"
            case .lineTooLong(let path, let limit):
                "\(path): the daemon sent a line over \(limit) bytes"
            case .notJSON(let path, let line):
                """
                \(path): the daemon sent a line that is not a JSON object: \
                \(TerminalText.escaped(String(line.prefix(200))))
                """
            case .serverError(let path, let message):
                "\(path): the daemon answered with an error: \(TerminalText.escaped(message))"
            case .unreadable(let path, let type, let reason):
                "\(path): the daemon sent a \(TerminalText.escaped(type)) message this version cannot read: "
                    + TerminalText.escaped(reason)
            }
        }
    }

    let path: String
    /// The longest line accepted from the daemon.
    var maxLineLength = 16 * 1024 * 1024
    private var fd: Int32
    private var buffer: [UInt8] = []
    private var readIndex = 0
    private var scanned = 0
    private var reachedEOF = false

    /// Connects to the daemon's socket. `timeout` (seconds) bounds the connect when the
    /// daemon's backlog is full.
    /// When set, a read ends with `.closed` as soon as this is signalled (a feed's stop), instead of
    /// waiting out its timeout.
    package var stopSignal: WakeSignal?

    package init(path: String, timeout: Double = 5) throws(ClientError) {
        self.path = path
        let socketPath = UnixSocketPath(path)
        do { try socketPath.validate() } catch { throw .invalidPath(error) }
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .io(path: path, code: errno) }
        var interval = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - timeout.rounded(.down)) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &interval, socklen_t(MemoryLayout<timeval>.size))
        let result = socketPath.withAddress { address, length in Glibc.connect(fd, address, length) }
        if result != 0 {
            let code = errno
            Glibc.close(fd)
            fd = -1
            throw code == EAGAIN || code == EWOULDBLOCK
                ? .timedOut(path: path, waiting: "the daemon to accept")
                : .cannotConnect(path: path, code: code)
        }
        var none = timeval()
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &none, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit {
        close()
    }

    var isOpen: Bool { fd >= 0 }

    /// The socket descriptor (for poll loops); -1 once closed.
    package var descriptor: Int32 { fd }

    package func close() {
        guard fd >= 0 else { return }
        Glibc.close(fd)
        fd = -1
    }

    // MARK: Sending

    /// Bytes sent that the daemon has not read yet (SIOCOUTQ: on a Unix socket, what waits in the
    /// peer's receive queue); nil when closed or unknown.
    package var bytesNotYetRead: Int? {
        guard fd >= 0 else { return nil }
        var count: Int32 = 0
        guard ioctl(fd, UInt(TIOCOUTQ), &count) == 0 else { return nil }
        return Int(count)
    }

    /// Sends raw bytes as they are.
    func send(bytes: [UInt8]) throws(ClientError) {
        guard fd >= 0 else { throw .closed(path: path) }
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { raw in
                Glibc.send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
            }
            if sent < 0 {
                if errno == EINTR { continue }
                throw errno == EPIPE || errno == ECONNRESET ? .closed(path: path) : .io(path: path, code: errno)
            }
            offset += sent
        }
    }

    /// Sends one command line, e.g. `{"cmd":"status"}`; the "\n" is added.
    func send(command: String) throws(ClientError) {
        try send(bytes: Array(command.utf8) + [UInt8(ascii: "\n")])
    }

    /// Sends one request (`.invalid` sends nothing: no client sends one).
    func send(_ request: ClientRequest) throws(ClientError) {
        guard let command = request.commandLine else { return }
        try send(command: command)
    }

    // MARK: Receiving

    /// The next line, without its "\n". Throws `.closed` at the end of the stream and
    /// `.timedOut` when none comes within `timeout` seconds (nil: wait forever).
    func readLine(timeout: Double? = 5) throws(ClientError) -> [UInt8] {
        let deadline = timeout.map { MonotonicClock.micros() + Int64($0 * 1_000_000) }
        while true {
            if let line = takeLine() { return line }
            if reachedEOF { throw .closed(path: path) }
            if buffer.count - readIndex > maxLineLength { throw .lineTooLong(path: path, limit: maxLineLength) }
            try fill(deadline: deadline)
        }
    }

    /// The next message.
    func readMessage(timeout: Double? = 5) throws(ClientError) -> Message {
        let line = try readLine(timeout: timeout)
        guard let object = (try? JSONSerialization.jsonObject(with: Data(line))) as? [String: Any] else {
            throw .notJSON(path: path, line: String(decoding: line, as: UTF8.self))
        }
        return Message(type: object["type"] as? String ?? "", object: object, line: line)
    }

    /// The next message, typed (`.unknown` for a type this version does not know).
    package func readServerMessage(timeout: Double? = 5) throws(ClientError) -> ServerMessage {
        try readMessage(timeout: timeout).decoded(path: path)
    }

    /// Reads the greeting: hello, then the current state.
    package func handshake(timeout: Double? = 5) throws(ClientError) -> (hello: Message, state: Message) {
        let hello = try readMessage(timeout: timeout)
        guard hello.type == "hello" else { throw .notJSON(path: path, line: hello.text) }
        let state = try readMessage(timeout: timeout)
        guard state.type == "state" else { throw .notJSON(path: path, line: state.text) }
        return (hello, state)
    }

    /// Sends `command` and returns the first message of type `reply`, skipping pushed state,
    /// beacon and dropped messages (`skipped` sees them). An error message throws `.serverError`.
    package func request(
        _ command: String, reply: String, timeout: Double? = 5,
        skipped: (Message) -> Void = { _ in }
    ) throws(ClientError) -> Message {
        try send(command: command)
        while true {
            let message = try readMessage(timeout: timeout)
            if message.type == reply { return message }
            if message.type == "error" {
                throw .serverError(path: path, message: message["error"] as? String ?? message.text)
            }
            if message.type == "bye" { throw .closed(path: path) }
            skipped(message)
        }
    }

    /// Whether a complete line is buffered (no blocking).
    var hasBufferedLine: Bool {
        buffer[readIndex...].contains(UInt8(ascii: "\n"))
    }

    private func takeLine() -> [UInt8]? {
        let searchStart = readIndex + scanned
        guard let newline = buffer[searchStart...].firstIndex(of: UInt8(ascii: "\n")) else {
            scanned = buffer.count - readIndex
            return nil
        }
        let line = Array(buffer[readIndex..<newline])
        readIndex = newline + 1
        scanned = 0
        if readIndex == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            readIndex = 0
        } else if readIndex > 64 * 1024 {
            buffer.removeFirst(readIndex)
            readIndex = 0
        }
        return line
    }

    private func fill(deadline: Int64?) throws(ClientError) {
        guard fd >= 0 else { throw .closed(path: path) }
        var descriptors = [
            pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
            pollfd(fd: stopSignal?.descriptor ?? -1, events: Int16(POLLIN), revents: 0),
        ]
        while true {
            var wait: Int32 = -1
            if let deadline {
                let left = deadline - MonotonicClock.micros()
                if left <= 0 { throw .timedOut(path: path, waiting: "a message") }
                wait = Int32(min((left + 999) / 1000, Int64(Int32.max)))
            }
            let ready = poll(&descriptors, 2, wait)
            if ready < 0 {
                if errno == EINTR { continue }
                throw .io(path: path, code: errno)
            }
            if ready == 0 { continue }
            if descriptors[1].revents != 0 { throw .closed(path: path) }
            break
        }
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        let count = chunk.withUnsafeMutableBytes { raw in recv(fd, raw.baseAddress!, raw.count, 0) }
        if count < 0 {
            if errno == EINTR || errno == EAGAIN { return }
            if errno == ECONNRESET { reachedEOF = true; return }
            throw .io(path: path, code: errno)
        }
        if count == 0 {
            reachedEOF = true
            return
        }
        buffer.append(contentsOf: chunk[0..<count])
    }

    /// Connects, reads hello and state, asks for the status (with `devices`, the other devices
    /// heard too) and returns it.
    package static func fetchStatus(path: String, timeout: Double = 5, devices: Bool = false) throws(ClientError)
        -> Message
    {
        let client = try TrackStateClient(path: path, timeout: timeout)
        defer { client.close() }
        _ = try client.handshake(timeout: timeout)
        let request: ClientRequest = devices ? .statusWithDevices : .status
        return try client.request(request.commandLine ?? "", reply: "status", timeout: timeout)
    }
}
