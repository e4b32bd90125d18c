import BeacondTestSupport
import CLinux
import Foundation
import NIOCore
import Testing

@testable import BeacondClient
@testable import BeacondCore

#if canImport(Glibc)
import Glibc
#endif

/// A web kiosk server on 127.0.0.1 (a free port) following `socketPath`, with short timeouts.
final class WebKioskHarness: @unchecked Sendable {
    let server: WebKioskServer
    let port: Int

    init(socketPath: String, configure: (inout WebKiosk.Configuration) -> Void = { _ in }) throws {
        var configuration = WebKiosk.Configuration(
            address: try WebKioskAddress(parsing: "127.0.0.1:0"), socketPath: socketPath)
        configuration.pingInterval = 1
        configuration.replyTimeout = 1
        configure(&configuration)
        server = try WebKioskServer(configuration: configuration)
        try server.startBlocking()
        port = server.boundAddress.port
    }

    func close() { server.shutdownBlocking() }

    /// Runs `body` with a test daemon and a web kiosk on its socket that has answered /healthz
    /// with 200; closes both after.
    static func withDaemon(
        configure: (inout WebKiosk.Configuration) -> Void = { _ in }, sourceLocation: SourceLocation = #_sourceLocation,
        _ body: (SocketHarness, WebKioskHarness) throws -> Void
    ) throws {
        let daemon = try SocketHarness()
        defer { daemon.close() }
        let web = try WebKioskHarness(socketPath: daemon.path, configure: configure)
        defer { web.close() }
        #expect(web.waitForHealth(200), sourceLocation: sourceLocation)
        try body(daemon, web)
    }

    /// Runs `body` on the server's loop and waits for it.
    func onLoop<T: Sendable>(_ body: @escaping @Sendable (WebKioskHub) throws -> T) throws -> T {
        let hub = server.hub
        return try hub.eventLoop.submit { try body(hub) }.wait()
    }

    var counters: WebKioskHub.Counters { (try? onLoop { $0.counters }) ?? WebKioskHub.Counters() }

    func connect() throws -> HTTPTestConnection { try HTTPTestConnection(port: port) }

    /// One request on a fresh connection.
    func get(_ path: String, method: String = "GET") throws -> HTTPTestResponse {
        let connection = try connect()
        defer { connection.close() }
        connection.send("\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        return try connection.readResponse(isHead: method == "HEAD")
    }

    /// `/healthz` until it answers `status`.
    func waitForHealth(_ status: Int, timeout: Double = 5) -> Bool {
        blockingWaitUntil(within: timeout, intervalMicros: 20_000) { (try? self.get("/healthz").status) == status }
    }
}

struct HTTPTestResponse {
    var status: Int
    /// Lower-cased names.
    var headers: [(String, String)]
    var body: [UInt8]

    func header(_ name: String) -> String? { headers.first { $0.0 == name.lowercased() }?.1 }
    var text: String { String(decoding: body, as: UTF8.self) }

    func json() throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
    }
}

struct HTTPTestError: Error, CustomStringConvertible {
    var description: String
}

/// A blocking TCP client speaking just enough HTTP/1.1 to check the server: requests are
/// written by hand, responses read by Content-Length or chunk by chunk (for the event stream).
final class HTTPTestConnection {
    let fd: CInt
    private var buffer: [UInt8] = []
    private var closedByPeer = false

    /// `receiveBuffer`: SO_RCVBUF set before connecting (a small one makes a slow reader).
    init(port: Int, receiveBuffer: Int? = nil) throws {
        guard let fd = TCPTestClient.connect(port: port, receiveBuffer: receiveBuffer) else {
            throw HTTPTestError(description: "connect to port \(port): errno \(errno)")
        }
        self.fd = fd
    }

    func close() { Glibc.close(fd) }

    func send(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Reads more bytes into the buffer; false at end of stream or after `timeout` seconds.
    private func fill(timeout: Double) -> Bool {
        guard !closedByPeer else { return false }
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, Int32(max(0, timeout * 1000))) == 1 else { return false }
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        let count = recv(fd, &chunk, chunk.count, 0)
        guard count > 0 else {
            closedByPeer = true
            return false
        }
        buffer += chunk[0..<count]
        return true
    }

    /// Bytes up to (without) `delimiter`, which is consumed.
    private func read(until delimiter: [UInt8], deadline: Int64) throws -> [UInt8] {
        while true {
            if let range = Self.find(delimiter, in: buffer) {
                let bytes = Array(buffer[..<range.lowerBound])
                buffer.removeSubrange(..<range.upperBound)
                return bytes
            }
            let left = Double(deadline - MonotonicClock.micros()) / 1_000_000
            guard left > 0, fill(timeout: left) else {
                throw HTTPTestError(description: closedByPeer ? "closed by the server" : "timed out")
            }
        }
    }

    private func read(count: Int, deadline: Int64) throws -> [UInt8] {
        while buffer.count < count {
            let left = Double(deadline - MonotonicClock.micros()) / 1_000_000
            guard left > 0, fill(timeout: left) else {
                throw HTTPTestError(description: closedByPeer ? "closed by the server" : "timed out")
            }
        }
        let bytes = Array(buffer[..<count])
        buffer.removeSubrange(..<count)
        return bytes
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Range<Int>? {
        guard haystack.count >= needle.count else { return nil }
        for start in 0...(haystack.count - needle.count)
        where haystack[start..<(start + needle.count)].elementsEqual(needle) {
            return start..<(start + needle.count)
        }
        return nil
    }

    /// The status line and headers.
    func readHead(timeout: Double = 5) throws -> HTTPTestResponse {
        let deadline = MonotonicClock.micros() + Int64(timeout * 1_000_000)
        let head = String(decoding: try read(until: Array("\r\n\r\n".utf8), deadline: deadline), as: UTF8.self)
        let lines = head.components(separatedBy: "\r\n")
        let parts = lines[0].split(separator: " ")
        guard parts.count >= 2, let status = Int(parts[1]) else {
            throw HTTPTestError(description: "bad status line: \(lines[0])")
        }
        let headers = lines.dropFirst().compactMap { line -> (String, String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            return (line[..<colon].lowercased(), value)
        }
        return HTTPTestResponse(status: status, headers: headers, body: [])
    }

    /// A whole response framed by Content-Length.
    func readResponse(isHead: Bool = false, timeout: Double = 5) throws -> HTTPTestResponse {
        var response = try readHead(timeout: timeout)
        let length = Int(response.header("content-length") ?? "0") ?? 0
        if !isHead {
            response.body = try read(count: length, deadline: MonotonicClock.micros() + Int64(timeout * 1_000_000))
        }
        return response
    }

    /// The next `data:` payload of a chunked event stream (after `readHead`).
    func readEvent(timeout: Double = 5) throws -> String {
        let deadline = MonotonicClock.micros() + Int64(timeout * 1_000_000)
        while true {
            if let event = pendingEvent() { return event }
            if try takeChunk() { continue }
            let left = Double(deadline - MonotonicClock.micros()) / 1_000_000
            guard left > 0, fill(timeout: left) else {
                throw HTTPTestError(description: closedByPeer ? "closed by the server" : "timed out")
            }
        }
    }

    /// Moves one whole chunk from the buffer to `events`; false when none is complete yet.
    private func takeChunk() throws -> Bool {
        guard let line = Self.find([13, 10], in: buffer) else { return false }
        let sizeText = String(decoding: buffer[..<line.lowerBound], as: UTF8.self)
        guard let size = Int(sizeText, radix: 16), size > 0 else { throw HTTPTestError(description: "stream ended") }
        let end = line.upperBound + size + 2
        guard buffer.count >= end else { return false }
        events += buffer[line.upperBound..<(line.upperBound + size)]
        buffer.removeSubrange(..<end)
        return true
    }

    private var events: [UInt8] = []

    private func pendingEvent() -> String? {
        while let range = Self.find([10, 10], in: events) {
            let block = String(decoding: events[..<range.lowerBound], as: UTF8.self)
            events.removeSubrange(..<range.upperBound)
            let data = block.split(separator: "\n").filter { $0.hasPrefix("data: ") }.map { $0.dropFirst(6) }
            if !data.isEmpty { return data.joined(separator: "\n") }
        }
        return nil
    }

    /// Events until one whose JSON satisfies `condition`, which is returned.
    func readEvent(timeout: Double = 5, where condition: ([String: Any]) -> Bool) throws -> [String: Any] {
        let deadline = MonotonicClock.micros() + Int64(timeout * 1_000_000)
        while true {
            let left = Double(deadline - MonotonicClock.micros()) / 1_000_000
            let event = try readEvent(timeout: max(0.001, left))
            let object = try JSONSerialization.jsonObject(with: Data(event.utf8)) as? [String: Any]
            if let object, condition(object) {
                return object
            }
        }
    }

    /// True when the server closes the connection within `timeout` seconds (data before is skipped).
    func isClosed(timeout: Double = 3) -> Bool {
        let deadline = MonotonicClock.micros() + Int64(timeout * 1_000_000)
        while !closedByPeer {
            let left = Double(deadline - MonotonicClock.micros()) / 1_000_000
            if left <= 0 { return false }
            buffer.removeAll()
            _ = fill(timeout: left)
        }
        return true
    }
}

/// SHA-256 of `text`, base64, by `openssl dgst -sha256 -binary | base64`.
func opensslSHA256Base64(_ text: String) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/sh")
    process.arguments = ["-c", "openssl dgst -sha256 -binary | base64 -w0"]
    let input = Pipe()
    let output = Pipe()
    process.standardInput = input
    process.standardOutput = output
    try process.run()
    input.fileHandleForWriting.write(Data(text.utf8))
    try input.fileHandleForWriting.close()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
}
