@testable import BeacondCore
import CircuitState
import Foundation
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

enum RemoteTestTools {
    static let python = "/usr/bin/python3"
    static let openssl = "/usr/bin/openssl"
    static var hasPython: Bool { FileManager.default.isExecutableFile(atPath: python) }
    static var hasOpenSSL: Bool { FileManager.default.isExecutableFile(atPath: openssl) }

    static let serverScript = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/remote_api_server.py").path

    /// A fresh directory under the system temporary directory.
    static func temporaryDirectory() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("beacond-remote-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// Runs a tool to completion; throws on a non-zero exit.
    static func run(_ tool: String, _ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw RemoteConfigurationError(reason: "\(tool) \(arguments) exited with \(process.terminationStatus)")
        }
    }

    /// A self-signed certificate for 127.0.0.1 (a CA for itself): (certificate, key) paths.
    static func selfSignedCertificate(in directory: String, name: String) throws -> (cert: String, key: String) {
        let cert = directory + "/\(name).pem"
        let key = directory + "/\(name)-key.pem"
        try run(openssl, [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=beacond test venue",
            "-addext", "subjectAltName=IP:127.0.0.1",
            "-addext", "basicConstraints=critical,CA:TRUE",
        ])
        return (cert, key)
    }

    /// A loopback port with nothing listening on it (bound, then closed).
    static func closedPort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

/// The venue API stand-in (`Fixtures/remote_api_server.py`), one per test.
final class RemoteAPIServer {
    let directory: String
    let port: Int
    let secure: Bool
    private let process: Process
    private let input = Pipe()
    private var controlPath: String { directory + "/control.json" }
    private var logPath: String { directory + "/requests.log" }

    var url: String { "\(secure ? "https" : "http")://127.0.0.1:\(port)/api/state" }

    init(tls: (cert: String, key: String)? = nil) throws {
        directory = try RemoteTestTools.temporaryDirectory()
        secure = tls != nil
        process = Process()
        try Self.writeControl(["status": 200, "body": "{}"], to: directory + "/control.json")
        process.executableURL = URL(fileURLWithPath: RemoteTestTools.python)
        var arguments = [RemoteTestTools.serverScript, directory + "/control.json", directory + "/requests.log"]
        if let tls { arguments += [tls.cert, tls.key] }
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        // The server exits when this pipe closes, so it cannot outlive a crashed test process.
        process.standardInput = input
        process.standardError = FileHandle.nullDevice
        try process.run()
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let data = output.fileHandleForReading.availableData
            if data.isEmpty { break }
            line.append(data)
        }
        guard let text = String(data: line, encoding: .utf8),
              let port = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw RemoteConfigurationError(reason: "the test server did not start")
        }
        self.port = port
    }

    deinit { stop() }

    /// Kills the server (SIGKILL: a child spawned from a test thread may inherit blocked signals).
    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// Serves `body` with `status` from the next request on.
    func serve(_ body: String, status: Int = 200) throws {
        try respond(["status": status, "body": body])
    }

    func respond(_ control: [String: Any]) throws {
        try Self.writeControl(control, to: controlPath)
    }

    /// The requests seen so far, oldest first.
    func log() -> [[String: Any]] {
        guard let text = try? String(contentsOfFile: logPath, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    func requests() -> [[String: Any]] { log().filter { $0["event"] as? String == "request" } }

    private static func writeControl(_ control: [String: Any], to path: String) throws {
        let data = try JSONSerialization.data(withJSONObject: control)
        try data.write(to: URL(fileURLWithPath: path), options: .atomic)
    }
}

/// Collects what a poller delivers.
final class RecordingRemoteSink: RemoteStateSink {
    enum Event: Hashable, Sendable {
        case fetched(RemoteSnapshot)
        case failed(RemoteFailureKind)
    }

    private let recorded = Mutex<[Event]>([])

    var events: [Event] { recorded.withLock { $0 } }

    func remoteFetched(_ snapshot: RemoteSnapshot, wallMicros: Int64) async {
        recorded.withLock { $0.append(.fetched(snapshot)) }
    }

    func remoteFailed(_ failure: RemoteFailure) async {
        recorded.withLock { $0.append(.failed(failure.kind)) }
    }

    /// Waits until `predicate` holds for the events, up to `timeout`; returns whether it did.
    func wait(upTo timeout: Duration = .seconds(5), until predicate: ([Event]) -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if predicate(events) { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return predicate(events)
    }
}

/// A swift-log handler that keeps every entry.
struct CapturingLogHandler: LogHandler {
    struct Entry: Sendable {
        var level: Logger.Level
        var message: String
        var metadata: [String: String]
    }

    final class Store: Sendable {
        private let entries = Mutex<[Entry]>([])
        var all: [Entry] { entries.withLock { $0 } }
        func append(_ entry: Entry) { entries.withLock { $0.append(entry) } }
        func at(_ level: Logger.Level) -> [Entry] { all.filter { $0.level == level } }
    }

    let store: Store
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var merged: [String: String] = [:]
        for (key, value) in metadata.merging(event.metadata ?? [:], uniquingKeysWith: { $1 }) {
            merged[key] = "\(value)"
        }
        store.append(Entry(level: event.level, message: "\(event.message)", metadata: merged))
    }

    static func logger() -> (Logger, Store) {
        let store = Store()
        return (Logger(label: "test.remote") { _ in CapturingLogHandler(store: store) }, store)
    }
}
