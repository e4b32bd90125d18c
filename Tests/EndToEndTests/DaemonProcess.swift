import BeacondTestSupport
import Foundation
import Testing

/// A `beacond run` process in the background, with its stderr (the log) collected. By default it
/// gets a fresh state directory of its own with the socket inside; the fault-injection tests choose
/// both paths, and may put a launcher in front (`unshare -m sh -c SCRIPT`, whose script ends in
/// `exec "$@"`, so the pid is the daemon's).
final class DaemonProcess: @unchecked Sendable {
    let process = Process()
    let socket: String
    let stateDirectory: String
    private let lock = NSLock()
    private var log = Data()
    private let errPipe = Pipe()

    /// `arguments` follow `beacond run --socket S --state-dir D`. `stateDirectory`: by default a new
    /// temporary directory named after `name`; `socket`: by default `beacond.sock` inside it.
    /// `launcherScript`, when given, runs as `unshare -m sh -c SCRIPT sh beacond run …` and must end
    /// in `exec "$@"`. `environment`: variables added to the test's own (the D-Bus tests point
    /// DBUS_SYSTEM_BUS_ADDRESS at their private bus).
    init(
        _ arguments: [String], name: String = UUID().uuidString.prefix(8).lowercased(),
        socket: String? = nil, stateDirectory: String? = nil, launcherScript: String? = nil,
        environment: [String: String] = [:]
    ) throws {
        if let stateDirectory {
            self.stateDirectory = stateDirectory
        } else {
            self.stateDirectory = BeacondProcess.temporaryFile("daemon-\(name)")
            try FileManager.default.createDirectory(atPath: self.stateDirectory, withIntermediateDirectories: true)
        }
        self.socket = socket ?? self.stateDirectory + "/beacond.sock"
        let daemon = [
            BeacondProcess.executable.path, "run", "--socket", self.socket, "--state-dir", self.stateDirectory,
        ]
        if let launcherScript {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
            process.arguments = ["-m", "/bin/sh", "-c", launcherScript, "sh"] + daemon + arguments
        } else {
            process.executableURL = BeacondProcess.executable
            process.arguments = Array(daemon.dropFirst()) + arguments
        }
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
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        errPipe.fileHandleForReading.readabilityHandler = nil
    }

    var pid: Int32 { process.processIdentifier }
    var logText: String { lock.withLock { String(decoding: log, as: UTF8.self) } }
    var logLines: [Substring] { logText.split(separator: "\n") }

    /// Log lines containing `text`.
    func count(_ text: String) -> Int { logLines.filter { $0.contains(text) }.count }

    /// Waits until the log has a line containing `text`; false after `timeout` seconds.
    @discardableResult
    func waitForLog(_ text: String, timeout: Double = 10) -> Bool {
        blockingWaitUntil(within: timeout, intervalMicros: 10_000) { logText.contains(text) }
    }

    /// Waits for the process to end by itself, and for the last of its log; false after `timeout` seconds.
    func waitForExit(timeout: Double = 10) -> Bool {
        guard blockingWaitUntil(within: timeout, intervalMicros: 5_000, { !process.isRunning }) else { return false }
        process.waitUntilExit()
        // The pipe's last bytes arrive after the exit: wait for its end of file.
        errPipe.fileHandleForReading.readabilityHandler = nil
        let rest = errPipe.fileHandleForReading.readDataToEndOfFile()
        lock.withLock { log.append(rest) }
        return true
    }

    /// Sends `signal` and waits for the exit; the seconds it took, or nil on timeout.
    func stop(signal: Int32 = SIGTERM, timeout: Double = 5) -> Double? {
        let started = Date()
        kill(pid, signal)
        guard waitForExit(timeout: timeout) else { return nil }
        return Date().timeIntervalSince(started)
    }

    /// The exit status when the process exited (not killed by a signal).
    var exitStatus: Int32? { process.terminationReason == .exit ? process.terminationStatus : nil }

    /// VmRSS and VmHWM (peak) of the daemon, kilobytes.
    var memory: (resident: Int, peak: Int)? {
        guard let resident = ProcessFigures.statusField(pid, "VmRSS:"),
            let peak = ProcessFigures.statusField(pid, "VmHWM:")
        else { return nil }
        return (resident, peak)
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

    /// `beacond status --json --timeout 0.1`: the binary gives up unless the daemon answers within
    /// 100 ms. The status object, or nil when it failed.
    func quickStatus() -> [String: Any]? {
        guard
            let result = try? BeacondProcess.run(["status", "--socket", socket, "--json", "--timeout", "0.1"]),
            result.status == 0
        else { return nil }
        return (try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8))) as? [String: Any]
    }

    /// The published state in a status reply: (seq, mode).
    static func state(of status: [String: Any]?) -> (seq: Int, mode: String)? {
        guard let state = status?["state"] as? [String: Any], let seq = state["seq"] as? Int,
            let mode = state["mode"] as? String
        else { return nil }
        return (seq, mode)
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

extension ProcessFigures {
    /// A kilobyte field of /proc/PID/status (`VmRSS:`, `VmHWM:`).
    static func statusField(_ pid: Int32, _ name: String) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix(name) {
            return Int(line.dropFirst(name.count).split(whereSeparator: { $0 == " " || $0 == "\t" }).first ?? "")
        }
        return nil
    }
}

/// A connected protocol client reading newline-delimited JSON.
final class LineClient {
    private let fd: Int32
    private var buffer = Data()

    init(path: String) throws {
        fd = try UnixAddress.connectedSocket(to: path)
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

/// A `sockaddr_un` for a path of at most 107 bytes.
struct UnixAddress {
    private var address = sockaddr_un()

    init(_ path: String) {
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.prefix(raw.count - 1).enumerated() { raw[index] = byte }
        }
    }

    func withPointer<Result>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> Result) -> Result {
        var copy = address
        return withUnsafePointer(to: &copy) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }

    /// A stream socket (close-on-exec) connected to `path`, for the caller to close; throws connect's errno.
    static func connectedSocket(to path: String) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EMFILE) }
        guard UnixAddress(path).withPointer({ connect(fd, $0, $1) }) == 0 else {
            let code = errno
            close(fd)
            throw POSIXError(POSIXErrorCode(rawValue: code) ?? .ECONNREFUSED)
        }
        return fd
    }
}

extension DaemonProcess {
    /// A daemon with `config` that replayed the example capture at maximum speed and holds its final
    /// state, and a client that has been sent that state.
    static func holdingReplay(config: String) throws -> (DaemonProcess, LineClient) {
        let daemon = try DaemonProcess([
            "--config", config, "--backend", "replay", "--replay", ReplayCommandTests.example, "--speed", "max",
        ])
        #expect(daemon.waitForLog("holding the final state"))
        let client = try LineClient(path: daemon.socket)
        #expect(client.next(type: "state") != nil)
        return (daemon, client)
    }
}
