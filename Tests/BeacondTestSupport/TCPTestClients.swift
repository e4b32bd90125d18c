import Foundation
import Glibc

/// Plain loopback TCP clients for the HTTP listeners' hardening tests: raw connections, a client
/// that pipelines requests without reading the answers, and commands run as another user.
package enum TCPTestClient {
    /// A connection to 127.0.0.1:`port`, or nil. `receiveBuffer`: SO_RCVBUF before connecting (a
    /// small one makes a client whose answers back up at once).
    package static func connect(port: Int, receiveBuffer: Int? = nil) -> CInt? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        if var size = receiveBuffer.map(CInt.init) {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<CInt>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            close(fd)
            return nil
        }
        return fd
    }

    package static func send(_ fd: CInt, _ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
    }

    /// One `GET path` on a fresh connection: the status code, or nil when no status line came
    /// within `timeout` seconds (refused, closed, or too slow).
    package static func status(port: Int, path: String, timeout: Double = 3) -> Int? {
        guard let fd = connect(port: port) else { return nil }
        defer { close(fd) }
        guard send(fd, "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n") else { return nil }
        var received: [UInt8] = []
        let deadline = Date().addingTimeInterval(timeout)
        while !received.contains(0x0A) {
            let left = Int32(deadline.timeIntervalSinceNow * 1000)
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard left > 0, poll(&poller, 1, left) == 1 else { return nil }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let count = recv(fd, &chunk, chunk.count, 0)
            guard count > 0 else { return nil }
            received += chunk[..<count]
        }
        let line = String(decoding: received.prefix { $0 != 0x0A }, as: UTF8.self)
        let parts = line.split(separator: " ")
        return parts.count >= 2 ? Int(parts[1]) : nil
    }

    /// True when the server closed `fd` (or reset it) within `timeout` seconds, answers read and dropped.
    package static func closedByServer(_ fd: CInt, timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let left = Int32(deadline.timeIntervalSinceNow * 1000)
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard left > 0, poll(&poller, 1, left) == 1 else { return false }
            var chunk = [UInt8](repeating: 0, count: 4096)
            if recv(fd, &chunk, chunk.count, 0) <= 0 { return true }
        }
    }

    /// Raises this process's soft descriptor limit to at least `count` (up to the hard limit);
    /// false when the hard limit is lower.
    package static func allowDescriptors(_ count: Int) -> Bool {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return false }
        if limit.rlim_cur >= rlim_t(count) { return true }
        guard limit.rlim_max >= rlim_t(count) else { return false }
        limit.rlim_cur = rlim_t(count)
        return setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0
    }
}

/// A client that sends `request` over and over on `connections` connections, as fast as the server
/// takes it, and never reads an answer (its receive buffers are small): the answers back up in the
/// server. Runs on a thread of its own until `stop()`.
package final class PipelineFlood: @unchecked Sendable {
    private let descriptors: [CInt]
    private let chunk: [UInt8]
    private let lock = NSLock()
    private var running = true
    private var sentBytes = 0
    private let done = DispatchSemaphore(value: 0)

    package init?(port: Int, request: String, connections: Int) {
        let fds = (0..<connections).compactMap { _ in TCPTestClient.connect(port: port, receiveBuffer: 4096) }
        guard fds.count == connections else {
            for fd in fds { close(fd) }
            return nil
        }
        descriptors = fds
        chunk = Array(String(repeating: request, count: max(1, 16 * 1024 / max(1, request.utf8.count))).utf8)
        Thread.detachNewThread { [self] in run() }
    }

    /// Bytes of requests the server has taken so far.
    package var sent: Int { lock.withLock { sentBytes } }

    private var isRunning: Bool { lock.withLock { running } }

    private func run() {
        var offsets = [Int](repeating: 0, count: descriptors.count)
        while isRunning {
            var progressed = false
            for (index, fd) in descriptors.enumerated() {
                let offset = offsets[index]
                let count = chunk.withUnsafeBytes { bytes in
                    Glibc.send(
                        fd, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_DONTWAIT | MSG_NOSIGNAL))
                }
                guard count > 0 else { continue }
                progressed = true
                offsets[index] = (offset + count) % chunk.count
                lock.withLock { sentBytes += count }
            }
            if !progressed { usleep(2_000) }
        }
        for fd in descriptors { close(fd) }
        done.signal()
    }

    /// Stops sending and closes the connections.
    package func stop() {
        let wasRunning = lock.withLock {
            defer { running = false }
            return running
        }
        if wasRunning { done.wait() }
    }
}

/// A command run as another user: `setpriv` drops to `uid` (and its gid) before exec. Tests run as
/// root; `isAvailable` says whether this one can.
package enum OtherUserCommand {
    package static let setpriv = "/usr/bin/setpriv"
    package static let curl = "/usr/bin/curl"

    package static var isAvailable: Bool {
        getuid() == 0 && FileManager.default.isExecutableFile(atPath: setpriv)
            && FileManager.default.isExecutableFile(atPath: curl)
    }

    /// Runs `curl arguments…` as `uid` to its end; its stdout.
    package static func curl(uid: UInt32, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: setpriv)
        process.arguments = ["--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", "--", curl] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }
}
