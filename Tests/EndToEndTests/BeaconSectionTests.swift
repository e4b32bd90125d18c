import BeacondTestSupport
import Foundation
import Testing

/// The daemon's `beacon:` section on a machine without Bluetooth (this one): the transmitter says
/// why it is down, and the daemon runs on and serves as before (docs/beacon.md).
@Suite struct BeaconSectionTests {
    /// The heartbeat goes on without a radio: race control's panel hears why the beacon is down.
    @Test(.enabled(if: RemoteTestTools.hasPython, "needs /usr/bin/python3 for the local panel stand-in"))
    func aTransmitterWithoutARadioIsReportedAndTheDaemonRunsOn() throws {
        let panel = try RemoteAPIServer(body: "{}")
        defer { panel.stop() }
        let config = BeacondProcess.temporaryFile("beacon.yaml")
        try """
        beacon:
          zone: 7
          adapter: hci3
          uid: kiosk-7
          heartbeat_url: http://127.0.0.1:\(panel.port)/api/beacons/heartbeat

        """.write(toFile: config, atomically: true, encoding: .utf8)
        let (daemon, client) = try DaemonProcess.holdingReplay(config: config)
        // Retried, as the scanner is: Bluetooth may arrive in the kernel with the adapter.
        #expect(daemon.waitForLog("beacon transmitter on hci3: this kernel has no Bluetooth support"))
        client.send(#"{"cmd":"status"}"#)
        let status = try #require(client.next(type: "status"))
        let beacon = try #require(status["beacon"] as? [String: Any])
        #expect(beacon["zone"] as? Int == 7)
        #expect(beacon["adapter"] as? String == "hci3")
        #expect(beacon["state"] as? String == "down")
        #expect((beacon["detail"] as? String)?.contains("no Bluetooth support") == true, "\(beacon)")
        #expect((beacon["detail"] as? String)?.contains("retrying in") == true, "\(beacon)")
        client.send(#"{"cmd":"ping"}"#)
        #expect(client.next(type: "pong") != nil)
        let heartbeat = try #require(beacon["heartbeat"] as? [String: Any])
        #expect((heartbeat["url"] as? String)?.hasSuffix("/api/beacons/heartbeat") == true)
        let posted = panel.requests().compactMap { $0["body"] as? String }
        let body = try #require(posted.first)
        #expect(body.contains(#""beacon_uid":"kiosk-7""#) && body.contains(#""mode":"UNKNOWN""#), "\(body)")
        // Why it is silent: no race control, or no radio, whichever the first heartbeat saw.
        #expect(body.contains(#""has_screen":1"#) && !body.contains(#""message":"""#), "\(body)")
        let human = try BeacondProcess.run(["status", "--socket", daemon.socket])
        #expect(human.stdout.contains("beacon    hci3 zone 7: down"), "\(human.stdout)")
        #expect(daemon.stop() != nil)
        #expect(daemon.process.terminationStatus == 0)
    }
}
