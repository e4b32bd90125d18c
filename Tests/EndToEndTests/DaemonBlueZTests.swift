import BLEPayload
import BeacondTestSupport
import Foundation
import Testing

@testable import BeacondClient
@testable import BeacondCore

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

    @Test func aBeaconHeardThroughBlueZIsPublishedAndAnAdapterLossIsSurvived() async throws {
        let bluez = try await BlueZMockBus.started()
        let daemon = try DaemonProcess(
            ["--backend", "bluez", "--adapter", "hci0"],
            environment: ["DBUS_SYSTEM_BUS_ADDRESS": bluez.address])
        #expect(daemon.waitForLog("listening on"))
        let client = try LineClient(path: daemon.socket)
        let up = try #require(
            Self.nextState(client) { Self.scanner($0) == "up" }, "the scanner never came up: \(daemon.logText)")
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
        let result = try BeacondProcess.run([
            "run", "--backend", "bluez", "--record", BeacondProcess.temporaryFile("bluez.btsnoop"),
            "--socket", BeacondProcess.temporaryFile("bluez-record.sock"),
            "--state-dir", FileManager.default.temporaryDirectory.path,
        ])
        #expect(result.status == 1)
        #expect(result.stderr.contains("--record needs raw HCI; the bluez backend has none: use --backend hci"))
    }
}

/// `beacond scan --backend bluez` against the same mock: the staff tool prints what the air holds
/// in replay's JSON shape.
@Suite(.serialized) struct ScanBlueZTests {
    @Test func scanPrintsEachAdvertisementAsReplayWouldAndStopsAfterItsDuration() async throws {
        let bluez = try await BlueZMockBus.started()
        let process = Process()
        process.executableURL = BeacondProcess.executable
        process.arguments = ["scan", "--backend", "bluez", "--adapter", "hci0", "--json", "--duration", "4"]
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = bluez.address
        process.environment = environment
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let stderrText = LockedText()
        err.fileHandleForReading.readabilityHandler = { handle in stderrText.append(handle.availableData) }
        try process.run()
        #expect(blockingWaitUntil(within: 5) { stderrText.text.contains("scanner up") }, "stderr: \(stderrText.text)")

        let device = try bluez.addDevice("C0:FF:EE:00:00:07")
        let frame = GeoRacingSignal.circuit(zone: 7, mode: .safetyCar, sequence: 42, ttl: 20).encoded()
        try bluez.advertise(device, frame: frame, rssi: -61)
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        err.fileHandleForReading.readabilityHandler = nil
        #expect(process.terminationStatus == 0)

        let lines = String(decoding: stdout, as: UTF8.self).split(separator: "\n")
        let report = try #require(
            lines.compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }.first { $0["addr"] as? String == "C0:FF:EE:00:00:07" }, "stdout: \(lines)")
        #expect(report["rssi"] as? Int == -61)
        let mfr = try #require((report["mfr"] as? [[String: Any]])?.first)
        #expect(mfr["company"] as? Int == 0x1234)
        #expect(mfr["data"] as? String == frame.map { String(format: "%02x", $0) }.joined())
        let signal = try #require(report["signal"] as? [String: Any])
        #expect(signal["zone"] as? Int == 7)
        #expect(signal["mode"] as? String == "safety_car")
        #expect(signal["seq"] as? Int == 42)
        #expect(stderrText.text.contains("GeoRacing signals"), "the summary line: \(stderrText.text)")
    }

    @Test func scanFailsAtOnceWhenTheAdapterIsMissing() async throws {
        let bluez = try await BlueZMockBus.started()
        let process = Process()
        process.executableURL = BeacondProcess.executable
        process.arguments = ["scan", "--backend", "bluez", "--adapter", "hci7"]
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = bluez.address
        process.environment = environment
        let err = Pipe()
        process.standardOutput = FileHandle.nullDevice
        process.standardError = err
        try process.run()
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 1)
        #expect(stderr.contains("hci7"), "stderr: \(stderr)")
    }
}

/// Text appended from a pipe's handler thread and read from the test's.
final class LockedText: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()

    func append(_ chunk: Data) { lock.withLock { data.append(chunk) } }
    var text: String { lock.withLock { String(decoding: data, as: UTF8.self) } }
}
