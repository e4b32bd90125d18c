import BeacondCore
import Glibc
import Synchronization

/// A real Mosquitto for the `mqtt` run: on a loopback port it picks, with a config file it writes in a
/// temporary directory, its log in that directory. The bench does not use the test targets' broker
/// (`Tests/BeacondTestSupport`); this is the same idea without Foundation.
final class BenchBroker {
    /// Where `make deps` (Debian's `mosquitto`) puts the broker, and other usual places.
    static let candidates = ["/usr/sbin/mosquitto", "/usr/local/sbin/mosquitto", "/usr/bin/mosquitto"]

    static func locate() -> String? {
        candidates.first { access($0, X_OK) == 0 }
    }

    let directory: String
    let port: Int
    let pid: pid_t
    var logPath: String { directory + "/mosquitto.log" }
    var url: String { "mqtt://127.0.0.1:\(port)" }

    /// Starts `binary` and waits (up to 10 s) until it accepts connections; a port taken between
    /// picking and binding is retried with another, twice.
    init(binary: String) throws {
        var template = Array("/tmp/beacond-mqtt-bench-XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw BenchFailure("mqtt: cannot make a temporary directory: \(errnoText(errno))")
        }
        directory = String(cString: made)
        var started: (port: Int, pid: pid_t)?
        for _ in 0..<3 where started == nil {
            let port = try Self.freePort()
            let config = directory + "/mosquitto.conf"
            var text = """
                listener \(port) 127.0.0.1
                allow_anonymous true
                persistence false
                log_dest stderr
                log_type error
                log_type warning

                """
            // Started as root, mosquitto drops to the `mosquitto` user, which cannot read this directory.
            if getuid() == 0 { text += "user root\n" }
            try Self.write(text, to: config)
            let pid = try Self.spawn(binary, ["-c", config], log: directory + "/mosquitto.log")
            if Self.waitUntilAccepting(port: port, pid: pid, seconds: 10) {
                started = (port, pid)
            } else {
                Self.terminate(pid)
            }
        }
        guard let started else {
            let log = BenchProc.read(directory + "/mosquitto.log") ?? ""
            Self.removeDirectory(directory)
            throw BenchFailure("mqtt: mosquitto did not listen on a loopback port: \(log)")
        }
        (port, pid) = started
    }

    /// SIGTERM, then SIGKILL after 3 s; the directory goes too.
    func stop() {
        Self.terminate(pid)
        Self.removeDirectory(directory)
    }

    /// The broker's CPU time so far (all its threads), nanoseconds; nil once it is gone.
    func cpuNanos() -> Int64? {
        BenchProc.cpuTicks(statPath: "/proc/\(pid)/stat").map { Int64(Double($0) / BenchProc.ticksPerSecond * 1e9) }
    }

    /// SIGTERM and a wait of up to 3 s, then SIGKILL. The child was started with no signal blocked
    /// (see `spawn`), so SIGTERM reaches it even when this bench runs under a test runner that
    /// blocks signals (which children inherit, and mosquitto restores around its waits).
    static func terminate(_ pid: pid_t) {
        kill(pid, SIGTERM)
        let deadline = BenchClock.nanos() + 3_000_000_000
        var status: Int32 = 0
        while BenchClock.nanos() < deadline {
            if waitpid(pid, &status, WNOHANG) == pid { return }
            BenchClock.sleep(seconds: 0.01)
        }
        kill(pid, SIGKILL)
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
    }

    /// An unused loopback port: bound to port 0, read back, closed.
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw BenchFailure("mqtt: socket: \(errnoText(errno))") }
        defer { close(fd) }
        var address = loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else { throw BenchFailure("mqtt: cannot bind a loopback port: \(errnoText(errno))") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    private static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        address.sin_port = port.bigEndian
        return address
    }

    private static func waitUntilAccepting(port: Int, pid: pid_t, seconds: Double) -> Bool {
        let deadline = BenchClock.nanos() + Int64(seconds * 1e9)
        while BenchClock.nanos() < deadline {
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid { return false }
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = loopback(port: UInt16(truncatingIfNeeded: port))
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                }
            }
            close(fd)
            if connected { return true }
            BenchClock.sleep(seconds: 0.02)
        }
        return false
    }

    /// posix_spawn with an empty signal mask and default dispositions, stdout and stderr to `log`.
    private static func spawn(_ path: String, _ arguments: [String], log: String) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGTERM, SIGINT, SIGHUP, SIGPIPE] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let code = posix_spawn(&pid, path, &actions, &attributes, argv, environ)
        guard code == 0 else { throw BenchFailure("mqtt: cannot start \(path): \(errnoText(code))") }
        return pid
    }

    private static func write(_ text: String, to path: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw BenchFailure("mqtt: cannot write \(path): \(errnoText(errno))") }
        defer { close(fd) }
        let bytes = Array(text.utf8)
        let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        guard written == bytes.count else { throw BenchFailure("mqtt: cannot write \(path): \(errnoText(errno))") }
    }

    private static func removeDirectory(_ path: String) {
        for name in ["mosquitto.conf", "mosquitto.log"] { unlink(path + "/" + name) }
        rmdir(path)
    }
}

/// A second libmosquitto client on the broker, as `beacond venue` would be: subscribed to every
/// node's state, it counts what reached the broker and keeps each node's newest `seq`.
final class BenchStateWatcher: @unchecked Sendable {
    private struct Seen {
        var messages = 0
        var newestSeq = 0
    }

    /// Shared with the client's callbacks (on its network thread).
    private final class Shared: Sendable {
        let seen = Mutex<[String: Seen]>([:])
        let connected = Atomic<Bool>(false)
    }

    private let shared = Shared()
    private let client: MosquittoClient
    let prefix: String

    init(url: String, prefix: String) throws {
        self.prefix = prefix
        guard let parsed = try? MqttURL(parsing: url) else { throw BenchFailure("mqtt: bad broker url \(url)") }
        var handlers = MosquittoClient.Handlers()
        let shared = shared
        handlers.connected = { client in
            client.subscribe(prefix + "/+/state", qos: 0)
            shared.connected.store(true, ordering: .releasing)
        }
        handlers.message = { topic, payload, _ in
            let seq = Self.seq(in: payload)
            shared.seen.withLock { table in
                var entry = table[topic, default: Seen()]
                entry.messages += 1
                entry.newestSeq = max(entry.newestSeq, seq ?? 0)
                table[topic] = entry
            }
        }
        client = try MosquittoClient(
            options: MosquittoClient.Options(url: parsed, clientID: "beacond-bench-watcher-\(getpid())"),
            handlers: handlers)
    }

    func start(within seconds: Double) throws {
        try client.start()
        let deadline = BenchClock.nanos() + Int64(seconds * 1e9)
        while !shared.connected.load(ordering: .acquiring), BenchClock.nanos() < deadline {
            BenchClock.sleep(seconds: 0.01)
        }
        guard shared.connected.load(ordering: .acquiring) else {
            throw BenchFailure("mqtt: the watcher did not connect")
        }
        // The subscription is sent once connected; give the broker a moment to take it.
        BenchClock.sleep(seconds: 0.2)
    }

    func stop() { client.stop() }

    /// State messages received for `node`, and the newest `seq` among them.
    func received(node: String) -> (messages: Int, newestSeq: Int) {
        let entry = shared.seen.withLock { $0[prefix + "/" + node + "/state"] } ?? Seen()
        return (entry.messages, entry.newestSeq)
    }

    /// Waits up to `seconds` for `node`'s state with `seq` (or newer) to arrive.
    func waitFor(node: String, seq: Int, seconds: Double) -> Bool {
        let deadline = BenchClock.nanos() + Int64(seconds * 1e9)
        while BenchClock.nanos() < deadline {
            if received(node: node).newestSeq >= seq { return true }
            BenchClock.sleep(seconds: 0.005)
        }
        return received(node: node).newestSeq >= seq
    }

    /// The top-level `"seq":N` of a state payload (it comes before the nested objects).
    static func seq(in payload: [UInt8]) -> Int? {
        let key = Array(#""seq":"#.utf8)
        guard payload.count > key.count else { return nil }
        for start in 0...(payload.count - key.count) where payload[start..<(start + key.count)].elementsEqual(key) {
            var value = 0
            var index = start + key.count
            var digits = 0
            while index < payload.count, digits < 18, payload[index] >= 0x30, payload[index] <= 0x39 {
                value = value * 10 + Int(payload[index] - 0x30)
                index += 1
                digits += 1
            }
            return digits > 0 ? value : nil
        }
        return nil
    }
}
