import BeacondCore
import Foundation
import Glibc

struct IdleResult {
    var pid: Int32
    var subscribers: Int
    var seconds: Double
    var replaySeconds: Double
    var cpuPercent: Double
    var cpuTicks: Int
    var switches: Int
    var threads: Int
    /// Threads that woke during the window: name, context switches, CPU ticks.
    var busiest: [(name: String, switches: Int, ticks: Int)]
    var rssKB: Int
    /// Anonymous memory (the daemon's own heap and stacks) and file pages (mapped code, mostly shared).
    var anonKB: Int
    var fileKB: Int
    var peakRSSKB: Int
    var exitStatus: Int32?

    var cpuMet: Bool { cpuPercent < 1 }
    var rssMet: Bool { rssKB < 30 * 1024 }
}

/// The real daemon binary (`--beacond`) as a subprocess: replays a small capture at maximum speed, then holds
/// its final state with a few subscribers connected; its CPU, wakeups and RSS are read from /proc.
enum IdleBench {
    static func run(daemon: String, subscribers: Int, seconds: Double) throws -> IdleResult {
        let directory = "/tmp/beacond-dbench-idle-\(getpid())"
        mkdir(directory, 0o755)
        defer { _ = try? FileManager.default.removeItem(atPath: directory) }
        let capture = directory + "/race-weekend.btsnoop"
        let socket = directory + "/beacond.sock"
        let log = directory + "/beacond.log"
        try FileOutput.write(ExampleCapture.raceWeekend() ?? [], to: capture)

        let process = Process()
        process.executableURL = URL(fileURLWithPath: daemon)
        process.arguments = [
            "run", "--backend", "replay", "--replay", capture, "--speed", "max",
            "--socket", socket, "--state-dir", directory, "--log-level", "info",
        ]
        var environment = ProcessInfo.processInfo.environment
        for key in ["NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES"] {
            environment[key] = nil
        }
        process.environment = environment
        try Data().write(to: URL(fileURLWithPath: log))
        let logHandle = FileHandle(forWritingAtPath: log)
        process.standardOutput = logHandle
        process.standardError = logHandle
        process.standardInput = FileHandle.nullDevice
        let launched = BenchClock.nanos()
        try process.run()
        let pid = process.processIdentifier
        defer {
            if process.isRunning { kill(pid, SIGKILL) }
        }
        func failure(_ what: String) -> BenchFailure {
            let tail = BenchProc.read(log).map { String($0.suffix(800)) } ?? ""
            return BenchFailure("idle: \(what); daemon log:\n\(tail)")
        }

        // Wait for the socket, then for the replay to finish (scanner "none": holding the final state).
        var control: TrackStateClient?
        let deadline = BenchClock.nanos() + 20_000_000_000
        while control == nil {
            guard process.isRunning else { throw failure("the daemon exited with \(process.terminationStatus)") }
            guard BenchClock.nanos() < deadline else { throw failure("the daemon's socket never answered") }
            if let client = try? TrackStateClient(path: socket), (try? client.handshake()) != nil {
                control = client
            } else {
                BenchClock.sleep(seconds: 0.02)
            }
        }
        var finished = false
        while !finished {
            guard BenchClock.nanos() < deadline else { throw failure("the replay did not finish within 20 s") }
            let status = try control!.request(#"{"cmd":"status"}"#, reply: "status")
            let scanner = (status["scanner"] as? [String: Any])?["state"] as? String
            if scanner == "none" { finished = true } else { BenchClock.sleep(seconds: 0.05) }
        }
        let replaySeconds = Double(BenchClock.nanos() - launched) / 1e9
        control?.close()

        let clients = try (0..<subscribers).map { _ in
            let client = try TrackStateClient(path: socket)
            _ = try client.handshake()
            return client
        }
        defer { for client in clients { client.close() } }
        // Let the connection burst settle before the window opens.
        BenchClock.sleep(seconds: 1)

        let statPath = "/proc/\(pid)/stat"
        let threadsBefore = BenchProc.threads(of: pid)
        guard let ticksBefore = BenchProc.cpuTicks(statPath: statPath) else { throw failure("cannot read \(statPath)") }
        let start = BenchClock.nanos()
        BenchClock.sleep(seconds: seconds)
        let elapsed = Double(BenchClock.nanos() - start) / 1e9
        guard let ticksAfter = BenchProc.cpuTicks(statPath: statPath) else { throw failure("cannot read \(statPath)") }
        let threadsAfter = BenchProc.threads(of: pid)
        let rss = BenchProc.statusField("VmRSS", path: "/proc/\(pid)/status") ?? -1
        let peak = BenchProc.statusField("VmHWM", path: "/proc/\(pid)/status") ?? -1
        let anon = BenchProc.statusField("RssAnon", path: "/proc/\(pid)/status") ?? -1
        let file = BenchProc.statusField("RssFile", path: "/proc/\(pid)/status") ?? -1

        var switches = 0
        var busiest: [(name: String, switches: Int, ticks: Int)] = []
        for (tid, after) in threadsAfter {
            let before = threadsBefore[tid]
            let woke = after.switches - (before?.switches ?? 0)
            let ticks = after.ticks - (before?.ticks ?? 0)
            switches += woke
            if woke > 0 || ticks > 0 { busiest.append((after.name, woke, ticks)) }
        }
        busiest.sort { $0.switches > $1.switches }

        // The subscribers must still be connected and served.
        for client in clients {
            _ = try client.request(#"{"cmd":"ping"}"#, reply: "pong")
        }

        kill(pid, SIGTERM)
        let stopDeadline = BenchClock.nanos() + 5_000_000_000
        while process.isRunning, BenchClock.nanos() < stopDeadline { BenchClock.sleep(seconds: 0.01) }
        let exitStatus: Int32? = process.isRunning ? nil : process.terminationStatus

        return IdleResult(
            pid: pid, subscribers: subscribers, seconds: elapsed, replaySeconds: replaySeconds,
            cpuPercent: Double(ticksAfter - ticksBefore) / BenchProc.ticksPerSecond / elapsed * 100,
            cpuTicks: ticksAfter - ticksBefore, switches: switches, threads: threadsAfter.count,
            busiest: Array(busiest.prefix(4)), rssKB: rss, anonKB: anon, fileKB: file, peakRSSKB: peak,
            exitStatus: exitStatus)
    }

    /// The `beacond` binary beside this one (`make bench` passes the static release build instead).
    static func siblingDaemonPath() throws -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { throw BenchFailure("cannot read /proc/self/exe") }
        let own = String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return URL(fileURLWithPath: own).deletingLastPathComponent().appendingPathComponent("beacond").path
    }
}
