import BeacondTestSupport
import Foundation
import Testing

@Suite(
    .serialized,
    .enabled(
        if: FileManager.default.isExecutableFile(atPath: "/usr/bin/python3"),
        "/usr/bin/python3 is missing: `make test` installs it"))
struct DaemonRemoteTests {
    static var example: String { ReplayCommandTests.example }

    static func remoteMode(_ daemon: DaemonProcess) -> String? {
        guard let status = try? daemon.status(), let state = status["state"] as? [String: Any] else { return nil }
        return state["source"] as? String == "remote" ? state["mode"] as? String : nil
    }

    static func waitFor(timeout: Double = 10, _ condition: () -> Bool) -> Bool {
        blockingWaitUntil(within: timeout, intervalMicros: 50_000, condition)
    }

    @Test func racecontrolStateIsPublishedAndSurvivesARestartAsLastKnown() throws {
        let api = try RemoteAPIServer(body: #"{"id":1,"global_mode":"YELLOW","message":"Debris at T3"}"#)
        let directory = "remote-\(UUID().uuidString.prefix(8))"
        var daemon: DaemonProcess? = try DaemonProcess(
            [
                "--backend", "replay", "--replay", Self.example, "--speed", "max", "--remote-url", api.url,
                "--poll-interval", "0.2",
            ], name: directory)
        let first = try #require(daemon)
        #expect(Self.waitFor { Self.remoteMode(first) == "yellow_flag" })
        // Race control calls an evacuation: it is published and latched.
        try api.serve(#"{"id":1,"global_mode":"EVACUATION","message":"Leave by gate B"}"#)
        #expect(Self.waitFor { Self.remoteMode(first) == "evacuation" })
        // The API breaks: errors are logged once per kind, and the evacuation stays.
        try api.serve("oops", status: 500)
        #expect(first.waitForLog("http_status"))
        // Three more failed polls (the server logs each request), not a fixed wait.
        let polled = api.requests().count
        #expect(Self.waitFor { api.requests().count >= polled + 3 })
        #expect(Self.remoteMode(first) == "evacuation")
        let warnings = first.logText.split(separator: "\n").filter {
            $0.contains("warning") && $0.contains("http_status")
        }
        #expect(warnings.count == 1)
        #expect(first.stop() != nil)
        daemon = nil

        // Restarted with the API still down: the latched evacuation is published again at once.
        let second = try DaemonProcess(
            [
                "--backend", "replay", "--replay", Self.example, "--speed", "max", "--remote-url", api.url,
                "--poll-interval", "0.2",
            ], name: directory)
        // The state store and the daemon each log the restoration, one after the other.
        #expect(second.waitForLog("restored the last known remote state"))
        #expect(second.waitForLog("evacuation latched"))
        let status = try second.status()
        let remote = (status["state"] as? [String: Any])?["remote"] as? [String: Any]
        #expect(remote?["latched"] as? Bool == true)
        #expect(remote?["message"] as? String == "Leave by gate B")
        #expect(Self.remoteMode(second) == "evacuation")
        // Race control lifts it.
        try api.serve(#"{"global_mode":"GREEN","message":"All clear"}"#)
        #expect(Self.waitFor { Self.remoteMode(second) == "normal" })
        #expect(second.stop() != nil)
    }
}
