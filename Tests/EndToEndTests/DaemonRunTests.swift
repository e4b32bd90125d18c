import BeacondTestSupport
import Foundation
import Testing

@Suite(.serialized) struct DaemonRunTests {
    static var example: String { ReplayCommandTests.example }

    @Test func replayAtMaxSpeedPublishesWhatTheTimelineComputes() throws {
        let daemon = try DaemonProcess(["--backend", "replay", "--replay", Self.example, "--speed", "max"])
        #expect(daemon.waitForLog("holding the final state"))
        let timeline = try BeacondProcess.run(["replay", "--timeline", "--json", Self.example]).jsonLines()
        let expected = timeline.map { line in
            "mode=\(line["mode"] as? String ?? "?") source=\(line["source"] as? String ?? "?") zone="
                + ((line["zone"] as? Int).map(String.init) ?? "-")
        }
        // The daemon publishes "unknown, none" before the first input; then exactly the timeline.
        #expect(daemon.publishedChanges == ["mode=unknown source=none zone=-"] + expected)
        let status = try daemon.status()
        let state = try #require(status["state"] as? [String: Any])
        #expect(state["mode"] as? String == "unknown")
        #expect((state["scanner"] as? [String: Any])?["state"] as? String == "none")
        #expect((status["counters"] as? [String: Any])?["signals"] as? Int == 728)
        #expect((status["beacons"] as? [Any])?.count == 4)
        let seconds = try #require(daemon.stop())
        #expect(seconds < 2)
        #expect(daemon.process.terminationStatus == 0)
        #expect(!FileManager.default.fileExists(atPath: daemon.socket))
    }

    @Test func clientsGetHelloStateAndByeOnSIGTERM() throws {
        let daemon = try DaemonProcess(["--backend", "replay", "--replay", Self.example, "--speed", "20"])
        #expect(daemon.waitForLog("listening on"))
        let client = try LineClient(path: daemon.socket)
        let hello = try #require(client.next())
        #expect(hello["type"] as? String == "hello")
        #expect(hello["protocol"] as? Int == 1)
        let first = try #require(client.next(type: "state"))
        #expect(first["seq"] is Int)
        // At 20x, the safety car (zone 2, +20 s of capture) arrives about a second in.
        var sawSafetyCar = false
        while let state = client.next(type: "state") {
            if state["mode"] as? String == "safety_car" {
                sawSafetyCar = true
                #expect(state["zone"] as? Int == 2)
                #expect((state["beacon"] as? [String: Any])?["addr"] as? String == "C0:FF:EE:00:00:02")
                break
            }
        }
        #expect(sawSafetyCar)
        let seconds = try #require(daemon.stop(signal: SIGTERM))
        #expect(seconds < 2)
        #expect(client.next(type: "bye") != nil)
        #expect(daemon.process.terminationStatus == 0)
    }

    @Test func sigintAlsoStopsGracefully() throws {
        let daemon = try DaemonProcess(["--backend", "replay", "--replay", Self.example, "--speed", "max"])
        #expect(daemon.waitForLog("listening on"))
        #expect(daemon.stop(signal: SIGINT) != nil)
        #expect(daemon.process.terminationStatus == 0)
    }

    @Test func sighupReloadsFusionSettingsWithoutDroppingClients() throws {
        let config = BeacondProcess.temporaryFile("reload.yaml")
        try "fusion:\n  policy: safety\n".write(toFile: config, atomically: true, encoding: .utf8)
        let (daemon, client) = try DaemonProcess.holdingReplay(config: config)
        try "fusion:\n  policy: most-severe\n  min_rssi: -70\n  zones: [1, 2]\nsocket:\n  max_clients: 5\n"
            .write(toFile: config, atomically: true, encoding: .utf8)
        kill(daemon.process.processIdentifier, SIGHUP)
        #expect(daemon.waitForLog("config reloaded"))
        #expect(daemon.logText.contains("fusion.policy"))
        #expect(daemon.logText.contains("needs restart"))
        client.send(#"{"cmd":"ping"}"#)
        #expect(client.next(type: "pong") != nil)
        // A broken file keeps the running configuration.
        try "fusion:\n  policy: reckless\n".write(toFile: config, atomically: true, encoding: .utf8)
        kill(daemon.process.processIdentifier, SIGHUP)
        #expect(daemon.waitForLog("reload failed, keeping the running configuration"))
        client.send(#"{"cmd":"ping"}"#)
        #expect(client.next(type: "pong") != nil)
        #expect(daemon.stop() != nil)
    }

    @Test func badConfigurationNamesFileLineAndKey() throws {
        let config = BeacondProcess.temporaryFile("bad.yaml")
        try "fusion:\n  policy: safety\n  min_rsi: -80\n".write(toFile: config, atomically: true, encoding: .utf8)
        let result = try BeacondProcess.run([
            "run", "--config", config, "--backend", "replay", "--replay", Self.example,
        ])
        #expect(result.status == 78)
        #expect(result.stderr.contains("\(config):3"))
        #expect(result.stderr.contains("fusion.min_rsi"))
    }

    /// The default backend is hci. Without Bluetooth in the kernel (a kiosk whose dongle is not
    /// plugged in yet, so its bluetooth module has not loaded) the daemon starts all the same: it
    /// serves its socket, reports the scanner down with the reason, and keeps retrying, so
    /// installing the package never fails on it. `beacond scan` exits 1 instead.
    @Test(.enabled(if: Self.kernelLacksBluetooth, "this kernel has Bluetooth; the no-Bluetooth case cannot happen"))
    func withoutBluetoothInTheKernelTheDaemonServesAndReportsTheScannerDown() throws {
        let daemon = try DaemonProcess([])
        #expect(daemon.waitForLog("this kernel has no Bluetooth support"), "\(daemon.logText)")
        let status = try daemon.status()
        let scanner = try #require(status["scanner"] as? [String: Any])
        #expect(scanner["state"] as? String == "down", "\(scanner)")
        #expect((scanner["detail"] as? String)?.contains("no Bluetooth support") == true, "\(scanner)")
        #expect((scanner["detail"] as? String)?.contains("retrying in") == true, "\(scanner)")
        #expect(daemon.stop() != nil)

        let scan = try BeacondProcess.run(["scan", "--duration", "1"])
        #expect(scan.status == 1)
        #expect(scan.stderr.contains("this kernel has no Bluetooth support"), "\(scan.stderr)")
    }

    static var kernelLacksBluetooth: Bool {
        let addressFamilyBluetooth: Int32 = 31
        let protocolHCI: Int32 = 1
        let fd = socket(addressFamilyBluetooth, Int32(SOCK_RAW.rawValue), protocolHCI)
        if fd >= 0 { close(fd) }
        return fd < 0 && errno == EAFNOSUPPORT
    }

    @Test func aSecondDaemonOnTheSameSocketRefusesToStart() throws {
        let daemon = try DaemonProcess(["--backend", "replay", "--replay", Self.example, "--speed", "max"])
        #expect(daemon.waitForLog("listening on"))
        let second = try BeacondProcess.run([
            "run", "--backend", "replay", "--replay", Self.example,
            "--socket", daemon.socket, "--state-dir", daemon.stateDirectory,
        ])
        #expect(second.status == 1)
        #expect(second.stderr.contains(daemon.socket))
        // The first one is unharmed.
        #expect(try daemon.status()["type"] as? String == "status")
        #expect(daemon.stop() != nil)
    }

    @Test func statusWithoutADaemonFailsClearly() throws {
        let path = BeacondProcess.temporaryFile("nobody.sock")
        let result = try BeacondProcess.run(["status", "--socket", path])
        #expect(result.status == 1)
        #expect(result.stderr.contains(path))
    }
}
