import BeacondTestSupport
import CircuitState
import Foundation
import Logging
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// GeoRacing's beacon heartbeat against a local HTTPS stand-in with a self-signed certificate, as
/// race control's panel often has (docs/beacon.md, "Heartbeat").
@Suite(
    .enabled(
        if: RemoteTestTools.hasPython && RemoteTestTools.hasOpenSSL,
        "needs /usr/bin/python3 and /usr/bin/openssl for a local HTTPS server with a self-signed certificate"))
struct BeaconHeartbeatTests {
    static func transmitter() -> BeaconTransmitter {
        BeaconTransmitter(
            configuration: .init(zone: 7, backend: "hci", adapter: "hci0", stateDir: nil),
            backend: RecordingAdvertiser(),
            logger: Logger(label: "test"))
    }

    /// A heartbeat every 100 ms to `server`'s panel path, trusting `caFile`.
    static func heartbeat(to server: RemoteAPIServer, caFile: String, transmitter: BeaconTransmitter) throws
        -> BeaconHeartbeat
    {
        var configuration = BeaconHeartbeat.Configuration(
            url: "https://127.0.0.1:\(server.port)/api/beacons/heartbeat", caFile: caFile, uid: "kiosk-7",
            hasScreen: true)
        configuration.interval = .milliseconds(100)
        return try BeaconHeartbeat(
            configuration: configuration, transmitter: transmitter, logger: Logger(label: "test"))
    }

    @Test func itPostsTheWindowsBeaconsFieldsOverPinnedTLSAndCountsFailures() async throws {
        let directory = try RemoteTestTools.temporaryDirectory()
        let panel = try RemoteTestTools.selfSignedCertificate(in: directory, name: "panel")
        let server = try RemoteAPIServer(body: #"{"ok":true}"#, tls: panel)
        defer { server.stop() }
        let transmitter = Self.transmitter()
        transmitter.update(.raceControl(mode: .redFlag, fresh: true, temperature: 12, problem: nil))
        let heartbeat = try Self.heartbeat(to: server, caFile: panel.cert, transmitter: transmitter)
        let task = Task { await heartbeat.run() }
        #expect(await waitUntil { heartbeat.status.sent >= 2 })
        let posted = server.requests().filter { $0["method"] as? String == "POST" }
        let first = try #require(posted.first)
        #expect(first["path"] as? String == "/api/beacons/heartbeat")
        let body = try #require(
            try JSONSerialization.jsonObject(with: Data(((first["body"] as? String) ?? "").utf8)) as? [String: Any])
        #expect(body["beacon_uid"] as? String == "kiosk-7")
        #expect(body["zone_id"] as? Int == 7)
        #expect(body["has_screen"] as? Int == 1)
        #expect(body["mode"] as? String == "RED_FLAG")
        #expect(body["arrow_direction"] as? String == "NONE")
        for field in ["name", "description", "latitude", "longitude", "message"] {
            #expect(body[field] != nil, "\(field)")
        }

        // Silent: the panel hears why. A failing panel is counted, never fatal.
        transmitter.update(.raceControl(mode: .redFlag, fresh: false, temperature: nil, problem: "timeout"))
        try server.serve("no", status: 503)
        #expect(await waitUntil { heartbeat.status.failed >= 1 })
        #expect(heartbeat.status.lastError == "HTTP 503")
        let silent = server.requests().compactMap { $0["body"] as? String }.last { $0.contains("UNKNOWN") }
        #expect(silent?.contains("race control") == true)
        task.cancel()
        await task.value
    }

    /// Pinned to another certificate, the panel is refused: no silent fallback to the system store.
    @Test func anotherCertificateIsRefused() async throws {
        let directory = try RemoteTestTools.temporaryDirectory()
        let panel = try RemoteTestTools.selfSignedCertificate(in: directory, name: "panel")
        let other = try RemoteTestTools.selfSignedCertificate(in: directory, name: "other")
        let server = try RemoteAPIServer(tls: panel)
        defer { server.stop() }
        let heartbeat = try Self.heartbeat(to: server, caFile: other.cert, transmitter: Self.transmitter())
        let task = Task { await heartbeat.run() }
        #expect(await waitUntil { heartbeat.status.failed >= 1 })
        #expect(heartbeat.status.sent == 0)
        #expect(server.requests().isEmpty)
        task.cancel()
        await task.value
    }
}
