import Foundation
import Glibc

/// A misbehaving venue API (`Fixtures/fault_remote_server.py`, Debian's Python) for the remote
/// fault-injection tests: it answers as the test last set with `set`, and logs every request.
package final class FaultRemoteServer {
    package let directory: String
    package let port: Int
    package let secure: Bool
    private let process: Process
    private let input = Pipe()
    private var controlPath: String { directory + "/control.json" }
    private var logPath: String { directory + "/requests.log" }

    package static let script = RepositoryPaths.fixture("fault_remote_server.py")

    package var url: String { "\(secure ? "https" : "http")://127.0.0.1:\(port)/api/state" }

    package init(_ control: [String: Any] = ["body": "{}"], tls: (cert: String, key: String)? = nil) throws {
        directory = try RemoteTestTools.temporaryDirectory()
        secure = tls != nil
        process = Process()
        try Self.write(control, to: directory + "/control.json")
        process.executableURL = URL(fileURLWithPath: RemoteTestTools.python)
        var arguments = [Self.script, directory + "/control.json", directory + "/requests.log"]
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
        guard let port = Int(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
        else {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw TestSupportError("the fault remote server did not start")
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

    /// Answers as `control` says (see the script's doc) from the next request on.
    package func set(_ control: [String: Any]) throws { try Self.write(control, to: controlPath) }

    /// A 200 with `body`.
    package func serve(_ body: String) throws { try set(["body": body]) }

    /// The log entries so far, oldest first.
    package func log() -> [[String: Any]] {
        guard let text = try? String(contentsOfFile: logPath, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    package var requestCount: Int { log().filter { $0["event"] as? String == "request" }.count }

    /// The bytes each streamed body got out before the client stopped reading.
    package var streamedBytes: [Int] {
        log().filter { $0["event"] as? String == "stream_end" }.compactMap { $0["sent"] as? Int }
    }

    private static func write(_ control: [String: Any], to path: String) throws {
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
        FileManager.default.createFile(atPath: database + "/index.txt", contents: Data())
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
