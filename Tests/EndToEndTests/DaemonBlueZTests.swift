@testable import beacond
import BLEPayload
import Foundation
import Testing

/// `beacond run --backend bluez` against python-dbusmock's bluez5 template.
@Suite(.serialized) struct DaemonBlueZTests {
    /// Reads states until one satisfies `predicate`; nil when the stream ends or stays quiet 5 s.
    static func nextState(_ client: LineClient, where predicate: ([String: Any]) -> Bool) -> [String: Any]? {
        while let state = client.next(type: "state") {
            if predicate(state) { return state }
        }
        return nil
    }

    static func scanner(_ state: [String: Any]) -> String? {
        (state["scanner"] as? [String: Any])?["state"] as? String
    }

    static func frame(_ mode: GeoRacingMode, sequence: UInt16) -> [UInt8] {
        GeoRacingSignal.circuit(zone: 3, mode: mode, sequence: sequence, ttl: 30).encoded()
    }

    @Test func aBeaconHeardThroughBlueZIsPublishedAndAnAdapterLossIsSurvived() throws {
        let bluez = try MockBlueZ()
        let daemon = try BlueZDaemonProcess(bus: bluez)
        #expect(daemon.waitForLog("listening on"))
        let client = try LineClient(path: daemon.socket)
        let up = try #require(Self.nextState(client) { Self.scanner($0) == "up" }, "the scanner never came up: \(daemon.logText)")
        #expect((up["scanner"] as? [String: Any])?["backend"] as? String == "bluez")

        // Discovery was started the way the backend promises.
        let calls = try bluez.adapterCalls()
        #expect(calls.map(\.method).prefix(2) == ["SetDiscoveryFilter", "StartDiscovery"])
        #expect(calls.first?.arguments.first?["Transport"]?.unwrapped == .string("le"))
        #expect(calls.first?.arguments.first?["DuplicateData"]?.unwrapped == .boolean(true))

        // A red flag from the beacon is published within a second of the advertisement.
        let device = try bluez.addDevice("C0:FF:EE:00:00:03")
        try bluez.advertise(device, frame: Self.frame(.redFlag, sequence: 1), rssi: -50)
        let sent = Date()
        let red = try #require(Self.nextState(client) { $0["mode"] as? String == "red_flag" })
        #expect(Date().timeIntervalSince(sent) < 1)
        #expect(red["zone"] as? Int == 3)
        #expect((red["beacon"] as? [String: Any])?["addr"] as? String == "C0:FF:EE:00:00:03")

        // The adapter goes: the scanner is down on the socket, and the daemon keeps running.
        try bluez.removeAdapter()
        #expect(Self.nextState(client) { Self.scanner($0) == "down" } != nil)
        #expect(daemon.process.isRunning)
        #expect(daemon.waitForLog("adapter hci0 was removed"))

        // It comes back: up again, and a new flag gets through.
        try bluez.addAdapter()
        #expect(Self.nextState(client) { Self.scanner($0) == "up" } != nil)
        try bluez.advertise(device, frame: Self.frame(.evacuation, sequence: 2), rssi: -50)
        #expect(Self.nextState(client) { $0["mode"] as? String == "evacuation" } != nil)

        daemon.process.terminate()
        daemon.process.waitUntilExit()
        #expect(daemon.process.terminationStatus == 0)
    }

    @Test func recordingNeedsRawHCI() throws {
        let result = try BeacondProcess.run(["run", "--backend", "bluez", "--record", BeacondProcess.temporaryFile("bluez.btsnoop"),
                                             "--socket", BeacondProcess.temporaryFile("bluez-record.sock"),
                                             "--state-dir", FileManager.default.temporaryDirectory.path])
        #expect(result.status == 1)
        #expect(result.stderr.contains("--record needs raw HCI; the bluez backend has none: use --backend hci"))
    }
}
