import Foundation
import Glibc

package enum RemoteTestTools {
    package static let python = "/usr/bin/python3"
    package static let openssl = "/usr/bin/openssl"
    package static var hasPython: Bool { FileManager.default.isExecutableFile(atPath: python) }
    package static var hasOpenSSL: Bool { FileManager.default.isExecutableFile(atPath: openssl) }

    package static let serverScript = RepositoryPaths.fixture("remote_api_server.py")

    /// A fresh directory under the system temporary directory, removed when the process exits.
    package static func temporaryDirectory() throws -> String {
        try TemporaryDirectory.make(prefix: "beacond-remote")
    }

    /// Runs a tool to completion; throws on a non-zero exit.
    package static func run(_ tool: String, _ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw TestSupportError("\(tool) \(arguments) exited with \(process.terminationStatus)")
        }
    }

    /// A self-signed certificate for 127.0.0.1 (a CA for itself): (certificate, key) paths.
    package static func selfSignedCertificate(in directory: String, name: String) throws
        -> (cert: String, key: String)
    {
        let cert = directory + "/\(name).pem"
        let key = directory + "/\(name)-key.pem"
        try run(
            openssl,
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=beacond test venue",
                "-addext", "subjectAltName=IP:127.0.0.1",
                "-addext", "basicConstraints=critical,CA:TRUE",
            ])
        return (cert, key)
    }

    /// A loopback port with nothing listening on it (bound, then closed).
    package static func closedPort() -> Int {
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

/// The venue API stand-in (`Fixtures/remote_api_server.py`, Debian's Python), one per test: it
/// answers as the test last said with `serve` or `respond` (which can make it misbehave: see the
/// script's doc), and logs every request.
package final class RemoteAPIServer {
    package let directory: String
    package let port: Int
    package let secure: Bool
    private let process: Process
    private let input = Pipe()
    private var controlPath: String { directory + "/control.json" }
    private var logPath: String { directory + "/requests.log" }

    package var url: String { "\(secure ? "https" : "http")://127.0.0.1:\(port)/api/state" }

    package init(body: String = "{}", tls: (cert: String, key: String)? = nil) throws {
        directory = try RemoteTestTools.temporaryDirectory()
        secure = tls != nil
        process = Process()
        try Self.writeControl(["status": 200, "body": body], to: directory + "/control.json")
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
            let port = Int(text.trimmingCharacters(in: .whitespacesAndNewlines))
        else {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw TestSupportError("the venue API stand-in did not start")
        }
        self.port = port
    }

    deinit { stop() }

    /// Kills the server (SIGKILL: a child spawned from a test thread may inherit blocked signals).
    package func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// Serves `body` with `status` from the next request on.
    package func serve(_ body: String, status: Int = 200) throws {
        try respond(["status": status, "body": body])
    }

    /// Answers as `control` says (see the script's doc) from the next request on.
    package func respond(_ control: [String: Any]) throws {
        try Self.writeControl(control, to: controlPath)
    }

    /// The log entries so far (requests and stream ends), oldest first.
    package func log() -> [[String: Any]] {
        guard let text = try? String(contentsOfFile: logPath, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    package func requests() -> [[String: Any]] { log().filter { $0["event"] as? String == "request" } }

    /// The bytes each streamed body got out before the client stopped reading.
    package var streamedBytes: [Int] {
        log().filter { $0["event"] as? String == "stream_end" }.compactMap { $0["sent"] as? Int }
    }

    private static func writeControl(_ control: [String: Any], to path: String) throws {
        let data = try JSONSerialization.data(withJSONObject: control)
        try data.write(to: URL(fileURLWithPath: path), options: .atomic)
    }
}

extension RemoteTestTools {
    /// A self-signed certificate for 127.0.0.1 that expired on 2 January 2020: (certificate, key).
    /// `openssl req` refuses dates in the past, so `openssl ca -selfsign` signs it with set dates.
    package static func expiredCertificate(in directory: String, name: String) throws -> (cert: String, key: String) {
        let base = directory + "/\(name)"
        let key = base + "-key.pem"
        let cert = base + ".pem"
        let database = base + "-ca"
        try FileManager.default.createDirectory(atPath: database, withIntermediateDirectories: true)
        try Data().write(to: URL(fileURLWithPath: database + "/index.txt"))
        try Data("01\n".utf8).write(to: URL(fileURLWithPath: database + "/serial"))
        let config = """
            [ca]
            default_ca = signer
            [signer]
            database = \(database)/index.txt
            new_certs_dir = \(database)
            serial = \(database)/serial
            default_md = sha256
            policy = anything
            x509_extensions = extensions
            [anything]
            commonName = supplied
            [extensions]
            subjectAltName = IP:127.0.0.1
            basicConstraints = critical,CA:TRUE

            """
        try Data(config.utf8).write(to: URL(fileURLWithPath: base + "-ca.cnf"))
        try run(
            openssl,
            [
                "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key,
                "-out", base + ".csr", "-subj", "/CN=beacond expired venue",
            ])
        try run(
            openssl,
            [
                "ca", "-batch", "-config", base + "-ca.cnf", "-selfsign", "-keyfile", key, "-in", base + ".csr",
                "-out", cert, "-startdate", "20200101000000Z", "-enddate", "20200102000000Z",
            ])
        return (cert, key)
    }
}
