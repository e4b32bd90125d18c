import BeacondTestSupport
import Foundation

/// A `beacond run` process in the background, with its stderr (the log) collected.
final class DaemonProcess: @unchecked Sendable {
    let process = Process()
    let socket: String
    let directory: String
    private let lock = NSLock()
    private var log = Data()
    private let errPipe = Pipe()

    /// `environment`: variables added to the test's own (the D-Bus tests point
    /// DBUS_SYSTEM_BUS_ADDRESS at their private bus).
    init(
        _ arguments: [String], name: String = UUID().uuidString.prefix(8).lowercased(),
        environment: [String: String] = [:]
    ) throws {
        directory = BeacondProcess.temporaryFile("daemon-\(name)")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        socket = directory + "/beacond.sock"
        process.executableURL = BeacondProcess.executable
        process.arguments = ["run", "--socket", socket, "--state-dir", directory] + arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = errPipe
        errPipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let chunk = handle.availableData
            guard let self, !chunk.isEmpty else { return }
            self.lock.withLock { self.log.append(chunk) }
        }
        try process.run()
    }

    deinit {
        if process.isRunning { process.terminate() }
        errPipe.fileHandleForReading.readabilityHandler = nil
    }

    var logText: String { lock.withLock { String(decoding: log, as: UTF8.self) } }

    /// Waits until the log has a line containing `text`; false after `timeout` seconds.
    @discardableResult
    func waitForLog(_ text: String, timeout: Double = 10) -> Bool {
        blockingWaitUntil(within: timeout, intervalMicros: 20_000) { logText.contains(text) }
    }

    /// Sends `signal` and waits for the process to exit; the seconds it took, or nil on timeout.
    func stop(signal: Int32 = SIGTERM, timeout: Double = 5) -> Double? {
        let started = Date()
        kill(process.processIdentifier, signal)
        guard blockingWaitUntil(within: timeout, { !process.isRunning }) else { return nil }
        return Date().timeIntervalSince(started)
    }

    /// `beacond status --json` against this daemon.
    func status() throws -> [String: Any] {
        let result = try BeacondProcess.run(["status", "--socket", socket, "--json"])
        guard result.status == 0,
            let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        else {
            throw CocoaError(.coderInvalidValue)
        }
        return object
    }

    /// The (mode, source, zone) of every published state in the audit log, consecutive repeats folded.
    var publishedChanges: [String] {
        var changes: [String] = []
        for line in logText.split(separator: "\n") where line.contains(" state seq=") {
            let fields = line.split(separator: " ").filter {
                $0.hasPrefix("mode=") || $0.hasPrefix("source=") || $0.hasPrefix("zone=")
            }.joined(separator: " ")
            if changes.last != fields { changes.append(fields) }
        }
        return changes
    }
}

/// A connected protocol client reading newline-delimited JSON.
final class LineClient {
    private let fd: Int32
    private var buffer = Data()

    init(path: String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.prefix(raw.count - 1).enumerated() { raw[index] = byte }
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard result == 0 else {
            close(fd)
            throw POSIXError(.ECONNREFUSED)
        }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    func send(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }

    /// The next JSON object, or nil at end of stream or after the 5 s receive timeout.
    func next() -> [String: Any]? {
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = buffer[buffer.startIndex..<newline]
                buffer.removeSubrange(buffer.startIndex...newline)
                return (try? JSONSerialization.jsonObject(with: Data(line))) as? [String: Any]
            }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let count = read(fd, &chunk, chunk.count)
            guard count > 0 else { return nil }
            buffer.append(contentsOf: chunk[0..<count])
        }
    }

    /// Reads until a message of `type`; nil if the stream ends first.
    func next(type: String) -> [String: Any]? {
        while let message = next() {
            if message["type"] as? String == type { return message }
        }
        return nil
    }
}
