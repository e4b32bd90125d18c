import BLEPayload
import BeacondTestSupport
import CBlueZ
import Foundation
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// The bluez backend against python-dbusmock's bluez5 template on a private bus. Serialized:
/// each test runs its own dbus-daemon and Python mock, and two cores are enough for one.
@Suite(.serialized) struct BlueZScannerBackendTests {
    /// A bus with bluetoothd (the mock) and adapter hci0, and the backend scanning on it.
    static func scanning(parameters: String? = nil) async throws -> (BlueZMockBus, RunningBlueZBackend) {
        let bus = try await BlueZMockBus()
        try await bus.startBlueZ(parameters: parameters)
        try bus.addAdapter()
        let running = try RunningBlueZBackend(address: bus.address)
        guard await running.sink.waitForState(.up) else {
            throw TestSupportError("the backend did not come up: \(running.sink.states)")
        }
        return (bus, running)
    }

    @Test func reportsManufacturerDataAndRSSIAndReusesTheDataForRSSIOnlyUpdates() async throws {
        let (bus, running) = try await Self.scanning()
        let frame = BlueZFixtures.frame()
        let path = try bus.addDevice(BlueZFixtures.address)
        try bus.update(
            path, ["ManufacturerData": BlueZFixtures.manufacturerData([(0x1234, frame)]), "RSSI": .int16(-60)])
        #expect(await running.sink.waitForReports(1))
        try bus.update(path, ["RSSI": .int16(-55)])
        #expect(await running.sink.waitForReports(2))

        let reports = running.sink.reports
        try #require(reports.count == 2)
        // AddDevice's InterfacesAdded set TxPower 0, which is rebuilt as a TX power AD.
        let data = BlueZFixtures.manufacturerAD(0x1234, frame) + [2, 0x0A, 0]
        #expect(reports[0].address == BluetoothAddress(BlueZFixtures.address))
        #expect(reports[0].addressType == .publicDevice)
        #expect(reports[0].rssi == -60)
        #expect(reports[0].data == data)
        #expect(reports[0].origin == .bluezDevice)
        #expect(abs(reports[0].timestamp - MonotonicClock.wallMicros()) < 10_000_000)
        #expect(reports[1].rssi == -55)
        #expect(reports[1].data == data)
        let decoded = reports[1].withReport { GeoRacingDecoder().decode($0.data) }
        guard case .signal(let signal) = decoded else {
            Issue.record("no GeoRacing signal in \(reports[1].data)")
            return
        }
        #expect(signal.mode == .redFlag)
        #expect(running.sink.flushCount >= 2)
        #expect(running.backend.counters.reports.load(ordering: .relaxed) == 2)
        _ = await running.stop()
    }

    @Test func oddTypesAreSkippedAndAMissingRSSIKeepsTheLastOne() async throws {
        let (bus, running) = try await Self.scanning()
        // AddDevice's ManufacturerData is an empty aa{qv}: skipped, and no report without data.
        let path = try bus.addDevice(BlueZFixtures.address)
        #expect(
            await waitUntil(within: 5, every: .milliseconds(10)) {
                running.backend.counters.skippedProperties.load(ordering: .relaxed) >= 1
            })
        // A value that is not `ay`: skipped too.
        try bus.update(
            path,
            [
                "ManufacturerData": .dictionary(
                    key: "q", value: "v",
                    [
                        DBusDictEntry(key: .uint16(0x1234), value: .variant(.string("not bytes")))
                    ])
            ])
        #expect(
            await waitUntil(within: 5, every: .milliseconds(10)) {
                running.backend.counters.skippedProperties.load(ordering: .relaxed) >= 2
            })
        #expect(running.sink.reports.isEmpty)
        #expect(
            await waitUntil(within: 5, every: .milliseconds(10)) {
                running.logs.at(.notice).contains {
                    $0.message.contains("ManufacturerData of unexpected type 'aa{qv}'")
                }
            })

        // Good data without an RSSI: reported with the RSSI AddDevice announced (-79).
        try bus.update(path, ["ManufacturerData": BlueZFixtures.manufacturerData([(0x1234, BlueZFixtures.frame())])])
        #expect(await running.sink.waitForReports(1))
        #expect(running.sink.reports.first?.rssi == -79)
        _ = await running.stop()
    }

    @Test func signalsFromAnyoneButBluetoothdAreIgnored() async throws {
        let (bus, running) = try await Self.scanning()
        let backend = try #require(try bus.otherClients().first)
        // A local process sends the backend a PropertiesChanged of its own, straight to it.
        let spoof = try DBusMessage.signal(
            path: BlueZFixtures.devicePath, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
            arguments: [
                .string("org.bluez.Device1"),
                .properties([
                    "ManufacturerData": BlueZFixtures.manufacturerData([(0x1234, BlueZFixtures.frame())]),
                    "RSSI": .int16(-40),
                ]),
                .array(element: "s", []),
            ])
        _ = backend.withCString { dbus_message_set_destination(spoof.raw, $0) }
        try bus.control().send(spoof)
        try bus.control().flush()
        // The real one, sent after it, is the only report.
        let path = try bus.addDevice(BlueZFixtures.address)
        try bus.update(
            path,
            [
                "ManufacturerData": BlueZFixtures.manufacturerData([(0x1234, BlueZFixtures.frame())]),
                "RSSI": .int16(-70),
            ])
        #expect(await running.sink.waitForReports(1))
        // The spoof came from another sender, so no ordering says it was handled first: a check
        // that nothing more arrives looks a while.
        try await Task.sleep(for: .milliseconds(200))
        #expect(running.sink.reports.map(\.rssi) == [-70])
        _ = await running.stop()
    }

    @Test func discoveryIsStartedWithTheLEFilterAndTheMonitorRegistered() async throws {
        let (bus, running) = try await Self.scanning()
        let adapter = "/org/bluez/hci0"
        #expect(
            await waitUntil(within: 5, every: .milliseconds(10)) {
                (try? bus.methods(adapter).contains("RegisterMonitor")) == true
            })
        let calls = try bus.calls(adapter)
        #expect(calls.map(\.method).prefix(2) == ["SetDiscoveryFilter", "StartDiscovery"])
        let filter = try #require(calls.first?.arguments.first)
        #expect(filter["Transport"]?.unwrapped == .string("le"))
        #expect(filter["DuplicateData"]?.unwrapped == .boolean(true))
        #expect(
            calls.first { $0.method == "RegisterMonitor" }?.arguments == [
                .objectPath(BlueZAdvertisementMonitor.defaultRoot)
            ])
        // The bus records the call before its reply reaches the scanner, so the log line is waited for.
        #expect(
            await waitUntil(within: 5, every: .milliseconds(10)) {
                running.logs.at(.info).contains {
                    $0.message.contains("advertisement monitor \(BlueZAdvertisementMonitor.defaultRoot) registered")
                }
            })

        // Shutdown is prompt and stops what it started.
        let (seconds, result) = await running.stop()
        #expect(seconds < 1)
        #expect((try? result.get()) != nil)
        let methods = try bus.methods(adapter)
        #expect(methods.contains("StopDiscovery"))
        #expect(methods.contains("UnregisterMonitor"))
    }

    @Test func theExportedMonitorDescribesTheGeoRacingPattern() async throws {
        let (bus, running) = try await Self.scanning()
        let clients = try bus.otherClients()
        try #require(clients.count == 1)
        let backend = clients[0]
        let root = BlueZAdvertisementMonitor.defaultRoot
        let objects = try #require(
            try bus.call(backend, root, "org.freedesktop.DBus.ObjectManager", "GetManagedObjects").first)
        let monitor = try #require(objects[root + "/georacing"]?["org.bluez.AdvertisementMonitor1"])
        #expect(monitor["Type"]?.unwrapped == .string("or_patterns"))
        #expect(
            monitor["Patterns"]?.unwrapped
                == .array(element: "(yyay)", [.structure([.byte(0), .byte(0xFF), .bytes([0x34, 0x12])])]))
        #expect(monitor["RSSISamplingPeriod"]?.unwrapped == .uint16(0))

        let path = root + "/georacing"
        #expect(
            try bus.call(
                backend, path, "org.freedesktop.DBus.Properties", "Get",
                [.string("org.bluez.AdvertisementMonitor1"), .string("Type")]) == [.variant(.string("or_patterns"))])
        #expect(
            try bus.call(
                backend, path, "org.freedesktop.DBus.Properties", "GetAll",
                [.string("org.bluez.AdvertisementMonitor1")]
            ).first?["Patterns"] != nil)
        #expect(
            try bus.call(backend, path, "org.freedesktop.DBus.Introspectable", "Introspect").first?.text?
                .contains("org.bluez.AdvertisementMonitor1") == true)
        #expect(
            try bus.call(backend, root, "org.freedesktop.DBus.Introspectable", "Introspect").first?.text?
                .contains("<node name=\"georacing\"/>") == true)
        try bus.call(backend, path, "org.bluez.AdvertisementMonitor1", "Activate")
        try bus.call(
            backend, path, "org.bluez.AdvertisementMonitor1", "DeviceFound", [.objectPath(BlueZFixtures.devicePath)])
        #expect(running.logs.at(.info).contains { $0.message.contains("activated the advertisement monitor") })
        #expect(throws: DBusCallError.self) {
            try bus.call(
                backend, path, "org.freedesktop.DBus.Properties", "Get",
                [.string("org.bluez.AdvertisementMonitor1"), .string("Nope")])
        }
        #expect(throws: DBusCallError.self) {
            try bus.call(backend, path, "org.bluez.AdvertisementMonitor1", "Explode")
        }
        _ = await running.stop()
    }

    @Test func withoutAMonitorManagerScanningGoesOnAndSaysSo() async throws {
        let (bus, running) = try await Self.scanning(parameters: #"{"enable_monitor_api": false}"#)
        let path = try bus.addDevice(BlueZFixtures.address)
        try bus.update(path, ["ManufacturerData": BlueZFixtures.manufacturerData([(0x1234, BlueZFixtures.frame())])])
        #expect(await running.sink.waitForReports(1))
        #expect(try !bus.methods("/org/bluez/hci0").contains("RegisterMonitor"))
        #expect(running.logs.at(.notice).contains { $0.message.contains("duplicate filter") })
        _ = await running.stop()
    }

    @Test func aRemovedAdapterIsWaitedForAndScannedAgain() async throws {
        let (bus, running) = try await Self.scanning()
        let before = running.sink.states.count
        try bus.removeAdapter()
        #expect(await running.sink.waitForState(.down, containing: "adapter hci0 was removed", after: before))
        try bus.addAdapter()
        #expect(await running.sink.waitForState(.up, after: before))
        #expect(
            await waitUntil(within: 5, every: .milliseconds(10)) {
                (try? bus.methods("/org/bluez/hci0")) == ["SetDiscoveryFilter", "StartDiscovery", "RegisterMonitor"]
            })
        // The mock keeps the old device object; its update is reported under the new adapter.
        let path = try bus.addDevice("C0:FF:EE:00:00:02")
        try bus.update(
            path,
            [
                "ManufacturerData": BlueZFixtures.manufacturerData([(0x1234, BlueZFixtures.frame())]),
                "RSSI": .int16(-50),
            ])
        #expect(await running.sink.waitForReports(1))
        #expect(running.sink.reports.last?.address == BluetoothAddress("C0:FF:EE:00:00:02"))
        _ = await running.stop()
    }

    @Test func aPoweredOffAdapterIsDownUntilPoweredOn() async throws {
        let (bus, running) = try await Self.scanning()
        let before = running.sink.states.count
        try bus.update("/org/bluez/hci0", interface: "org.bluez.Adapter1", ["Powered": .boolean(false)])
        #expect(await running.sink.waitForState(.down, containing: "powered off", after: before))
        try bus.update("/org/bluez/hci0", interface: "org.bluez.Adapter1", ["Powered": .boolean(true)])
        #expect(await running.sink.waitForState(.up, after: before))
        _ = await running.stop()
    }

    @Test func aBluetoothdRestartIsFollowed() async throws {
        let (bus, running) = try await Self.scanning()
        let before = running.sink.states.count
        bus.stopBlueZ()
        #expect(await running.sink.waitForState(.down, containing: "bluetoothd left the system bus", after: before))
        try await bus.startBlueZ()
        try bus.addAdapter()
        #expect(await running.sink.waitForState(.up, after: before, within: 10))
        let path = try bus.addDevice(BlueZFixtures.address)
        try bus.update(path, ["ManufacturerData": BlueZFixtures.manufacturerData([(0x1234, BlueZFixtures.frame())])])
        #expect(await running.sink.waitForReports(1))
        _ = await running.stop()
    }

    @Test func aLostSystemBusIsReconnected() async throws {
        let (bus, running) = try await Self.scanning()
        let before = running.sink.states.count
        bus.stopBlueZ()
        bus.stopBus()
        #expect(await running.sink.waitForState(.down, containing: "lost the system bus connection", after: before))
        try await bus.startBus()
        try await bus.startBlueZ()
        try bus.addAdapter()
        #expect(await running.sink.waitForState(.up, after: before, within: 10))
        let (seconds, _) = await running.stop()
        #expect(seconds < 1)
    }

    @Test func theDaemonWaitsForMissingPieces() async throws {
        let bus = try await BlueZMockBus()
        bus.stopBus()
        // No bus: down, retrying.
        let running = try RunningBlueZBackend(address: bus.address)
        #expect(await running.sink.waitForState(.down, containing: "cannot connect to the system bus"))
        #expect(running.sink.states.first?.detail?.contains("retrying in 0.2 s") == true)
        // A bus without bluetoothd, then bluetoothd without the adapter, then the adapter.
        try await bus.startBus()
        #expect(await running.sink.waitForState(.down, containing: "bluetoothd is not running"))
        try await bus.startBlueZ()
        #expect(await running.sink.waitForState(.down, containing: "adapter hci0 not found"))
        try bus.addAdapter()
        #expect(await running.sink.waitForState(.up))
        _ = await running.stop()
    }

    @Test func theScanToolFailsAtOnceWithTheReason() async throws {
        let bus = try await BlueZMockBus()
        bus.stopBus()
        var running = try RunningBlueZBackend(address: bus.address, retries: false)
        #expect(await Self.failure(running)?.contains("cannot connect to the system bus") == true)

        try await bus.startBus()
        running = try RunningBlueZBackend(address: bus.address, retries: false)
        #expect(await Self.failure(running)?.contains("bluetoothd is not running") == true)

        try await bus.startBlueZ()
        try bus.addAdapter()
        running = try RunningBlueZBackend(address: bus.address, adapter: "hci1", retries: false)
        #expect(await Self.failure(running) == "adapter hci1 not found in BlueZ")
        #expect(running.sink.states.last?.state == .down)
    }

    @Test func accessDeniedNamesTheDBusPolicy() async throws {
        let bus = try await BlueZMockBus(
            extraPolicy: #"<deny send_destination="org.bluez" send_interface="org.bluez.Adapter1" "#
                + #"send_member="StartDiscovery"/>"#
        )
        try await bus.startBlueZ()
        try bus.addAdapter()
        let running = try RunningBlueZBackend(address: bus.address, retries: false)
        let message = try #require(await Self.failure(running))
        #expect(message.contains("org.bluez.Adapter1.StartDiscovery"))
        #expect(message.contains("bluetoothd's D-Bus policy"))
        #expect(message.contains("bluetooth group"))
        // The daemon keeps retrying instead.
        let daemon = try RunningBlueZBackend(address: bus.address)
        #expect(await daemon.sink.waitForState(.down, containing: "bluetooth group"))
        #expect(daemon.sink.states.first?.detail?.contains("retrying in") == true)
        _ = await daemon.stop()
    }

    @Test func silenceRestartsDiscovery() async throws {
        let bus = try await BlueZMockBus()
        try await bus.startBlueZ()
        try bus.addAdapter()
        let running = try RunningBlueZBackend(address: bus.address, silenceRestart: 300_000)
        #expect(await running.sink.waitForState(.up))
        #expect(
            await waitUntil(within: 5, every: .milliseconds(10)) {
                (try? bus.methods("/org/bluez/hci0").filter { $0 == "StartDiscovery" }.count) ?? 0 >= 2
            })
        #expect(try bus.methods("/org/bluez/hci0").contains("StopDiscovery"))
        #expect(
            await waitUntil(within: 5, every: .milliseconds(10)) {
                running.logs.at(.info).contains { $0.message.contains("restarting discovery on hci0") }
            })
        _ = await running.stop()
    }

    /// The error `run()` ended with, within 5 s.
    static func failure(_ running: RunningBlueZBackend) async -> String? {
        guard case .failure(let error)? = await running.result(within: 5) else { return nil }
        return (error as? BlueZScannerError)?.description
    }
}
