import Foundation
import Testing

/// The daemon's `beacon:` section on a machine without Bluetooth (this one): the transmitter says
/// why it is down, and the daemon runs on and serves as before (docs/beacon.md).
@Suite struct BeaconSectionTests {
    @Test func aTransmitterWithoutARadioIsReportedAndTheDaemonRunsOn() throws {
        let config = BeacondProcess.temporaryFile("beacon.yaml")
        try "beacon:\n  zone: 7\n  adapter: hci3\n".write(toFile: config, atomically: true, encoding: .utf8)
        let (daemon, client) = try DaemonProcess.holdingReplay(config: config)
        #expect(daemon.waitForLog("running without the transmitter"))
        client.send(#"{"cmd":"status"}"#)
        let status = try #require(client.next(type: "status"))
        let beacon = try #require(status["beacon"] as? [String: Any])
        #expect(beacon["zone"] as? Int == 7)
        #expect(beacon["adapter"] as? String == "hci3")
        #expect(beacon["state"] as? String == "down")
        #expect((beacon["detail"] as? String)?.contains("no Bluetooth support") == true, "\(beacon)")
        client.send(#"{"cmd":"ping"}"#)
        #expect(client.next(type: "pong") != nil)
        let human = try BeacondProcess.run(["status", "--socket", daemon.socket])
        #expect(human.stdout.contains("beacon    hci3 zone 7: down"), "\(human.stdout)")
        #expect(daemon.stop() != nil)
        #expect(daemon.process.terminationStatus == 0)
    }
}
