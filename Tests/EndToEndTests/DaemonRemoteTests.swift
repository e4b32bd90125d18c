import Foundation
import Testing

/// The venue API stand-in from Tests/DaemonTests/Fixtures, run with Debian's Python.
final class VenueAPIServer {
    let process = Process()
    let control: String
    let port: Int
    private let stdin = Pipe()

    init(body: String) throws {
        control = BeacondProcess.temporaryFile("control-\(UUID().uuidString.prefix(8)).json")
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("DaemonTests/Fixtures/remote_api_server.py").path
        let out = Pipe()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [script, control, control + ".log"]
        process.standardInput = stdin
        process.standardOutput = out
        try Self.write(body: body, to: control)
        try process.run()
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            line.append(chunk)
        }
        guard let port = Int(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw CocoaError(.fileReadCorruptFile)
        }
        self.port = port
    }

    var url: String { "http://127.0.0.1:\(port)/api/state" }

    func serve(body: String, status: Int = 200) throws {
        try Self.write(body: body, status: status, to: control)
    }

    private static func write(body: String, status: Int = 200, to path: String) throws {
        let control = try JSONSerialization.data(withJSONObject: ["status": status, "body": body])
        try control.write(to: URL(fileURLWithPath: path + ".tmp"))
        _ = rename(path + ".tmp", path)
    }

    deinit {
        process.terminate()
        try? stdin.fileHandleForWriting.close()
    }
}

@Suite(.serialized, .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/python3"),
                            "/usr/bin/python3 is missing: `make test` installs it"))
struct DaemonRemoteTests {
    static var example: String { ReplayCommandTests.example }

    static func remoteMode(_ daemon: DaemonProcess) -> String? {
        guard let status = try? daemon.status(), let state = status["state"] as? [String: Any] else { return nil }
        return state["source"] as? String == "remote" ? state["mode"] as? String : nil
    }

    static func waitFor(timeout: Double = 10, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition() { return true }
            usleep(50_000)
        }
        return condition()
    }

    @Test func racecontrolStateIsPublishedAndSurvivesARestartAsLastKnown() throws {
        let api = try VenueAPIServer(body: #"{"id":1,"global_mode":"YELLOW","message":"Debris at T3"}"#)
        let directory = "remote-\(UUID().uuidString.prefix(8))"
        var daemon: DaemonProcess? = try DaemonProcess(
            ["--backend", "replay", "--replay", Self.example, "--speed", "max", "--remote-url", api.url,
             "--poll-interval", "0.2"], name: directory)
        let first = try #require(daemon)
        #expect(Self.waitFor { Self.remoteMode(first) == "yellow_flag" })
        // Race control calls an evacuation: it is published and latched.
        try api.serve(body: #"{"id":1,"global_mode":"EVACUATION","message":"Leave by gate B"}"#)
        #expect(Self.waitFor { Self.remoteMode(first) == "evacuation" })
        // The API breaks: errors are logged once per kind, and the evacuation stays.
        try api.serve(body: "oops", status: 500)
        #expect(first.waitForLog("http_status"))
        usleep(800_000)
        #expect(Self.remoteMode(first) == "evacuation")
        let warnings = first.logText.split(separator: "\n").filter { $0.contains("warning") && $0.contains("http_status") }
        #expect(warnings.count == 1)
        #expect(first.stop() != nil)
        daemon = nil

        // Restarted with the API still down: the latched evacuation is published again at once.
        let second = try DaemonProcess(
            ["--backend", "replay", "--replay", Self.example, "--speed", "max", "--remote-url", api.url,
             "--poll-interval", "0.2"], name: directory)
        #expect(second.waitForLog("restored the last known remote state"))
        #expect(second.logText.contains("evacuation latched"))
        let status = try second.status()
        let remote = (status["state"] as? [String: Any])?["remote"] as? [String: Any]
        #expect(remote?["latched"] as? Bool == true)
        #expect(remote?["message"] as? String == "Leave by gate B")
        #expect(Self.remoteMode(second) == "evacuation")
        // Race control lifts it.
        try api.serve(body: #"{"global_mode":"GREEN","message":"All clear"}"#)
        #expect(Self.waitFor { Self.remoteMode(second) == "normal" })
        #expect(second.stop() != nil)
    }
}
