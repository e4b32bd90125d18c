import BeacondTestSupport
import Foundation
import Glibc

/// A `beacond run` for the fault-injection scenarios: like `DaemonProcess`, with the socket and
/// state paths chosen by the test, an optional launcher in front (`unshare -m sh -c …`, whose
/// script ends in `exec "$@"`, so the pid is the daemon's), and readings of its memory.
final class FaultDaemon: @unchecked Sendable {
    let process = Process()
    let socket: String
    let stateDirectory: String
    private let lock = NSLock()
    private var log = Data()
    private let errPipe = Pipe()

    /// `arguments` follow `beacond run --socket S --state-dir D`; `launcherScript`, when given,
    /// runs as `unshare -m sh -c SCRIPT sh beacond run …` and must end in `exec "$@"`.
    init(
        _ arguments: [String], socket: String, stateDirectory: String, launcherScript: String? = nil
    ) throws {
        self.socket = socket
        self.stateDirectory = stateDirectory
        let daemon = [BeacondProcess.executable.path, "run", "--socket", socket, "--state-dir", stateDirectory]
        if let launcherScript {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
            process.arguments = ["-m", "/bin/sh", "-c", launcherScript, "sh"] + daemon + arguments
        } else {
            process.executableURL = BeacondProcess.executable
            process.arguments = Array(daemon.dropFirst()) + arguments
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

    @discardableResult
    func waitForLog(_ text: String, timeout: Double = 10) -> Bool {
        blockingWaitUntil(within: timeout, intervalMicros: 10_000) { logText.contains(text) }
    }

    /// Waits for the process to end by itself; false after `timeout` seconds.
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
    func stop(signal: Int32 = SIGTERM, timeout: Double = 10) -> Double? {
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

/// A well-behaved protocol client: a thread reads everything the daemon sends, as it arrives,
/// and keeps the `state` messages' seq and mode, and whether the daemon said `bye` or hung up.
final class WatchingClient: @unchecked Sendable {
    private let fd: Int32
    private let lock = NSLock()
    private var states: [(seq: Int, mode: String)] = []
    private var replies: [[String: Any]] = []
    private var ended = false
    private var sawBye = false

    init(path: String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        let bound = UnixAddress(path)
        let result = bound.withPointer { connect(fd, $0, $1) }
        guard result == 0 else {
            close(fd)
            throw POSIXError(.ECONNREFUSED)
        }
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
    func waitForLatest(of daemon: FaultDaemon, timeout: Double = 5) -> Bool {
        blockingWaitUntil(within: timeout, intervalMicros: 20_000) {
            guard let state = FaultDaemon.state(of: daemon.quickStatus()), let latest else { return false }
            return latest.seq == state.seq && latest.mode == state.mode
        }
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
}
