import Foundation
import Glibc

/// A Mosquitto broker for one test (`make deps` installs `mosquitto` and `mosquitto-clients`): on a
/// loopback port it picks, with a config it writes, its log collected. It can be stopped and started
/// again on the same port (the outage test).
package final class MosquittoBroker: @unchecked Sendable {
    package static let broker = "/usr/sbin/mosquitto"
    package static let subscriber = "/usr/bin/mosquitto_sub"
    package static let passwd = "/usr/bin/mosquitto_passwd"
    package static let publisher = "/usr/bin/mosquitto_pub"
    package static var available: Bool {
        [broker, subscriber, passwd, publisher].allSatisfy { FileManager.default.isExecutableFile(atPath: $0) }
    }

    package struct TLS: Sendable {
        package var cert: String
        package var key: String

        package init(cert: String, key: String) {
            self.cert = cert
            self.key = key
        }
    }

    package let directory: String
    package let port: Int
    private let configPath: String
    private var process: Process?
    private let lock = NSLock()
    private var log = Data()

    /// `users`: name → password; with any, anonymous clients are refused. `acl`: the text of an
    /// `acl_file` (docs/mqtt.md, "Broker access control").
    package init(tls: TLS? = nil, users: [String: String] = [:], acl: String? = nil) throws {
        directory = try TemporaryDirectory.make(prefix: "beacond-mqtt", short: true)
        port = RemoteTestTools.closedPort()
        configPath = directory + "/mosquitto.conf"
        var config = """
            listener \(port) 127.0.0.1
            persistence false
            log_dest stderr
            log_type error
            log_type warning
            log_type notice
            log_type information
            connection_messages true

            """
        // Started as root, mosquitto drops to the `mosquitto` user, which cannot read the test's private
        // directory (its certificates, its password file): it stays the test's user.
        if getuid() == 0 { config += "user root\n" }
        if let tls { config += "certfile \(tls.cert)\nkeyfile \(tls.key)\n" }
        if users.isEmpty {
            config += "allow_anonymous true\n"
        } else {
            let passwords = directory + "/passwords"
            try Data().write(to: URL(fileURLWithPath: passwords))
            for (user, password) in users.sorted(by: { $0.key < $1.key }) {
                try RemoteTestTools.run(Self.passwd, ["-b", passwords, user, password])
            }
            config += "allow_anonymous false\npassword_file \(passwords)\n"
        }
        if let acl {
            let aclPath = directory + "/acl"
            try acl.write(toFile: aclPath, atomically: true, encoding: .utf8)
            config += "acl_file \(aclPath)\n"
        }
        try config.write(toFile: configPath, atomically: true, encoding: .utf8)
        try start()
    }

    deinit { stop() }

    package var url: String { "mqtt://127.0.0.1:\(port)" }
    package var tlsURL: String { "mqtts://127.0.0.1:\(port)" }
    package var logText: String { lock.withLock { String(decoding: log, as: UTF8.self) } }

    /// Starts the broker and waits until it accepts connections.
    package func start() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.broker)
        process.arguments = ["-c", configPath]
        process.standardOutput = FileHandle.nullDevice
        let pipe = Pipe()
        process.standardError = pipe
        pipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let chunk = handle.availableData
            guard let self, !chunk.isEmpty else { return }
            self.lock.withLock { self.log.append(chunk) }
        }
        try process.run()
        self.process = process
        guard blockingWaitUntil(within: 10, intervalMicros: 20_000, { Self.accepts(port: port) }) else {
            throw TestSupportError("mosquitto did not listen on \(port): \(logText)")
        }
    }

    /// Stops the broker (SIGKILL, as a crash or a pulled cable would) and waits for it to exit. Not
    /// SIGTERM: the test runner's children inherit its blocked signals, and mosquitto restores that
    /// mask around its waits, so a SIGTERM would never be delivered.
    package func stop() {
        guard let process, process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        self.process = nil
    }

    private static func accepts(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    /// The retained messages on `filter` (`topic` → payload), read with `mosquitto_sub`: it exits after
    /// `count` messages; with fewer it is killed after 3 s (SIGKILL: the test runner's children inherit
    /// blocked signals, so its own `-W` timer never fires) and what it printed is returned.
    package func retained(_ filter: String, count: Int = 1, extra: [String] = []) throws -> [String: String] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.subscriber)
        process.arguments =
            ["-h", "127.0.0.1", "-p", String(port), "-t", filter, "-v", "--retained-only", "-C", String(count)]
            + extra
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        if !blockingWaitUntil(within: 3, intervalMicros: 20_000, { !process.isRunning }) {
            kill(process.processIdentifier, SIGKILL)
        }
        process.waitUntilExit()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        var messages: [String: String] = [:]
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            guard let space = line.firstIndex(of: " ") else { continue }
            messages[String(line[..<space])] = String(line[line.index(after: space)...])
        }
        return messages
    }
}

extension MosquittoBroker {
    /// Publishes with `mosquitto_pub` (QoS 1), the payload read from `file`; `extra` adds options
    /// (`-u`, `-P`, `-r`). Waits for it to exit (at most 30 s); its exit status.
    @discardableResult
    package func publish(_ topic: String, file: String, extra: [String] = []) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.publisher)
        process.arguments = ["-h", "127.0.0.1", "-p", String(port), "-q", "1", "-t", topic, "-s"] + extra
        process.standardInput = try FileHandle(forReadingFrom: URL(fileURLWithPath: file))
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        if !blockingWaitUntil(within: 30, intervalMicros: 20_000, { !process.isRunning }) {
            kill(process.processIdentifier, SIGKILL)
        }
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// A self-signed CA certificate (and its key) for `127.0.0.1` and `localhost`, whichever way the
    /// client checks the name.
    package static func certificate(in directory: String, name: String) throws -> TLS {
        let cert = directory + "/\(name).pem"
        let key = directory + "/\(name)-key.pem"
        try RemoteTestTools.run(
            RemoteTestTools.openssl,
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=beacond test broker \(name)",
                "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:127.0.0.1",
                "-addext", "basicConstraints=critical,CA:TRUE",
            ])
        return TLS(cert: cert, key: key)
    }
}
