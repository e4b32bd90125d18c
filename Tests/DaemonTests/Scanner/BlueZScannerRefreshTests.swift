import BeacondTestSupport
import Foundation
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// Issue 12, "Repeats on real adapters": while no advertisement monitor is active, the backend
/// restarts discovery every `scanner.bluez_refresh_s` so the controller's duplicate filter lets an
/// unchanged advertisement through again. In `BlueZScannerBackendTests` (an extension), so the
/// timed pass of `make test` runs them one at a time like the other mock-bus tests.
extension BlueZScannerBackendTests {
    static let adapterPath = "/org/bluez/hci0"
    static let monitorPath = BlueZAdvertisementMonitor.defaultRoot + "/georacing"
    /// What one refresh calls on the adapter, in order.
    static let refreshCalls = ["StopDiscovery", "SetDiscoveryFilter", "StartDiscovery"]

    /// How often the mock's adapter was called with `method` (0 when the mock cannot say).
    static func count(_ bus: BlueZMockBus, _ method: String) -> Int {
        (try? bus.methods(adapterPath).filter { $0 == method }.count) ?? 0
    }

    /// A bus with the mock and hci0, `setUp` applied, then the backend refreshing every 0.3 s.
    static func refreshing(
        parameters: String? = nil, _ setUp: (BlueZMockBus) throws -> Void = { _ in }
    ) async throws -> (BlueZMockBus, RunningBlueZBackend) {
        let bus = try await BlueZMockBus()
        try await bus.startBlueZ(parameters: parameters)
        try bus.addAdapter()
        try setUp(bus)
        let running = try RunningBlueZBackend(address: bus.address, refresh: 300_000)
        guard await running.sink.waitForState(.up) else {
            throw TestSupportError("the backend did not come up: \(running.sink.states)")
        }
        return (bus, running)
    }

    /// Replaces a method of the mock's adapter with Python `code` (dbusmock's AddMethod).
    static func replace(
        _ bus: BlueZMockBus, _ interface: String, _ method: String, in signature: String, _ code: String
    ) throws {
        try bus.call(
            "org.bluez", adapterPath, "org.freedesktop.DBus.Mock", "AddMethod",
            [.string(interface), .string(method), .string(signature), .string(""), .string(code)])
    }

    /// Every StartDiscovery has the LE filter set right before it, and every one after the first
    /// follows a StopDiscovery: the restarts never lose the filter.
    static func expectRefreshPattern(_ calls: [(method: String, arguments: [DBusValue])]) {
        let discovery = calls.filter { $0.method != "RegisterMonitor" && $0.method != "UnregisterMonitor" }
        #expect(discovery.map(\.method).prefix(2) == ["SetDiscoveryFilter", "StartDiscovery"])
        let restarts = Array(discovery.dropFirst(2))
        for start in stride(from: 0, to: restarts.count, by: 3) {
            let group = restarts[start..<min(start + 3, restarts.count)].map(\.method)
            #expect(Array(refreshCalls.prefix(group.count)) == group, "restart \(start / 3): \(group)")
        }
        for call in discovery where call.method == "SetDiscoveryFilter" {
            let filter = call.arguments.first
            #expect(filter?["Transport"]?.unwrapped == .string("le"))
            #expect(filter?["DuplicateData"]?.unwrapped == .boolean(true))
        }
    }

    @Test func withoutAMonitorManagerDiscoveryIsRestartedAtThePeriod() async throws {
        let begun = ContinuousClock.now
        let (bus, running) = try await Self.refreshing(parameters: #"{"enable_monitor_api": false}"#)
        #expect(await waitUntil(within: 5, every: .milliseconds(10)) { Self.count(bus, "StartDiscovery") >= 4 })
        // Three restarts, each a period after the end of the one before, the first a period after
        // the start: never sooner.
        #expect(ContinuousClock.now - begun >= .milliseconds(900))
        Self.expectRefreshPattern(try bus.calls(Self.adapterPath))

        // At the period, not faster: 1.5 s holds five periods.
        let before = Self.count(bus, "StartDiscovery")
        try await Task.sleep(for: .milliseconds(1500))
        let made = Self.count(bus, "StartDiscovery") - before
        #expect(made >= 1 && made <= 6, "\(made) restarts in 1.5 s at a 0.3 s period")

        let status = running.backend.counters.status
        #expect(status.discoveryRefreshes >= 3)
        #expect(status.discoveryRefreshFailures == 0)
        let notices = running.logs.at(.notice).filter { $0.message.contains("restarting discovery on hci0") }
        #expect(notices.count == 1)
        #expect(
            notices.first?.message.hasPrefix(
                "restarting discovery on hci0 every 0.3 s (scanner.bluez_refresh_s) because BlueZ offers no "
                    + "advertisement monitor manager (AdvertisementMonitorManager1)") == true)
        #expect(notices.first?.message.contains("Experimental = true in /etc/bluetooth/main.conf") == true)
        #expect(running.sink.states.map(\.state) == [.up])

        // Advertisements still become reports between the restarts.
        let path = try bus.addDevice(BlueZFixtures.address)
        try bus.advertise(path, frame: BlueZFixtures.frame(), rssi: -60)
        #expect(await running.sink.waitForReports(1))
        _ = await running.stop()
    }

    @Test func anActiveMonitorStopsTheRestartsAndAReleaseBringsThemBack() async throws {
        let (bus, running) = try await Self.refreshing()
        #expect(
            await waitUntil(within: 5, every: .milliseconds(10)) {
                (try? bus.methods(Self.adapterPath).contains("RegisterMonitor")) == true
            })
        // Registered but not yet activated by bluetoothd: the restarts go on.
        #expect(await waitUntil(within: 5, every: .milliseconds(10)) { Self.count(bus, "StartDiscovery") >= 2 })
        #expect(
            running.logs.at(.notice).contains {
                $0.message.contains("because BlueZ has not activated the advertisement monitor")
            })

        // bluetoothd activates the monitor: no restart after that.
        let backend = try #require(try bus.otherClients().first)
        try bus.call(backend, Self.monitorPath, "org.bluez.AdvertisementMonitor1", "Activate")
        let activated = (Self.count(bus, "StartDiscovery"), Self.count(bus, "StopDiscovery"))
        let refreshes = running.backend.counters.refreshes.load(ordering: .relaxed)
        try await Task.sleep(for: .milliseconds(1500))
        #expect(Self.count(bus, "StartDiscovery") == activated.0)
        #expect(Self.count(bus, "StopDiscovery") == activated.1)
        #expect(running.backend.counters.refreshes.load(ordering: .relaxed) == refreshes)

        // bluetoothd releases it: the restarts resume, with the filter.
        try bus.call(backend, Self.monitorPath, "org.bluez.AdvertisementMonitor1", "Release")
        #expect(
            await waitUntil(within: 5, every: .milliseconds(10)) {
                Self.count(bus, "StartDiscovery") >= activated.0 + 2
            })
        #expect(
            running.logs.at(.notice).contains {
                $0.message.contains("released the advertisement monitor on hci0")
                    && $0.message.contains("discovery is restarted every 0.3 s")
            })
        Self.expectRefreshPattern(try bus.calls(Self.adapterPath))
        #expect(running.sink.states.map(\.state) == [.up])
        _ = await running.stop()
    }

    @Test func aRefusedMonitorMeansRestarts() async throws {
        let (bus, running) = try await Self.refreshing { bus in
            try Self.replace(
                bus, "org.bluez.AdvertisementMonitorManager1", "RegisterMonitor", in: "o",
                "raise dbus.exceptions.DBusException('no monitors today', name='org.bluez.Error.Failed')")
        }
        #expect(await waitUntil(within: 5, every: .milliseconds(10)) { Self.count(bus, "StartDiscovery") >= 3 })
        #expect(running.logs.at(.notice).contains { $0.message.contains("BlueZ refused the advertisement monitor") })
        #expect(
            running.logs.at(.notice).contains {
                $0.message.contains("every 0.3 s (scanner.bluez_refresh_s) because BlueZ refused the advertisement")
            })
        Self.expectRefreshPattern(try bus.calls(Self.adapterPath))
        _ = await running.stop()
    }

    @Test func aFailedRestartIsLoggedAndRetried() async throws {
        let (bus, running) = try await Self.refreshing(parameters: #"{"enable_monitor_api": false}"#)
        // The next StartDiscovery fails once, as bluetoothd's does when the controller is busy.
        try Self.replace(
            bus, "org.bluez.Adapter1", "StartDiscovery", in: "",
            """
            self.beacond_starts = getattr(self, 'beacond_starts', 0) + 1
            if self.beacond_starts == 1:
                raise dbus.exceptions.DBusException('Resource Not Ready', name='org.bluez.Error.NotReady')
            """)
        #expect(await running.sink.waitForState(.down, containing: "org.bluez.Error.NotReady", after: 1))
        #expect(await running.sink.waitForState(.up, after: 2))
        #expect(running.backend.counters.refreshFailures.load(ordering: .relaxed) == 1)
        #expect(running.logs.at(.notice).contains { $0.message.contains("StartDiscovery failed") })
        // The retry set the filter again, and the restarts go on.
        let recovered = Self.count(bus, "StartDiscovery")
        #expect(
            await waitUntil(within: 5, every: .milliseconds(10)) { Self.count(bus, "StartDiscovery") >= recovered + 2 })
        let calls = try bus.calls(Self.adapterPath)
        let starts = calls.indices.filter { calls[$0].method == "StartDiscovery" }
        #expect(starts.allSatisfy { $0 > 0 && calls[$0 - 1].method == "SetDiscoveryFilter" })
        #expect(running.backend.counters.refreshFailures.load(ordering: .relaxed) == 1)
        let (seconds, result) = await running.stop()
        #expect(seconds < 1)
        #expect((try? result.get()) != nil)
    }

    @Test func aFailedStopStillStartsDiscoveryAndIsCounted() async throws {
        let (bus, running) = try await Self.refreshing(parameters: #"{"enable_monitor_api": false}"#)
        try Self.replace(
            bus, "org.bluez.Adapter1", "StopDiscovery", in: "",
            "raise dbus.exceptions.DBusException('No discovery started', name='org.bluez.Error.Failed')")
        let before = Self.count(bus, "StartDiscovery")
        #expect(
            await waitUntil(within: 5, every: .milliseconds(10)) { Self.count(bus, "StartDiscovery") >= before + 2 })
        #expect(running.backend.counters.refreshFailures.load(ordering: .relaxed) >= 2)
        #expect(running.logs.at(.notice).contains { $0.message.contains("StopDiscovery failed") })
        #expect(running.sink.states.map(\.state) == [.up])
        _ = await running.stop()
    }

    @Test func aZeroPeriodNeverRestarts() async throws {
        let bus = try await BlueZMockBus()
        try await bus.startBlueZ(parameters: #"{"enable_monitor_api": false}"#)
        try bus.addAdapter()
        let running = try RunningBlueZBackend(address: bus.address, refresh: 0)
        #expect(await running.sink.waitForState(.up))
        try await Task.sleep(for: .milliseconds(800))
        #expect(try bus.methods(Self.adapterPath) == ["SetDiscoveryFilter", "StartDiscovery"])
        #expect(running.logs.at(.notice).contains { $0.message.contains("scanner.bluez_refresh_s is 0") })
        _ = await running.stop()
    }
}

/// `scanner.bluez_refresh_s`: its default, range and errors, and its way into the backend.
@Suite struct BlueZRefreshConfigTests {
    @Test func theDefaultIsFourSecondsAndTheFileSetsIt() throws {
        #expect(DaemonConfiguration().scanner.blueZRefresh == 4_000_000)
        #expect(BlueZScannerConfiguration().refreshInterval == 4_000_000)
        let scratch = ConfigScratch()
        let configuration = try scratch.load("scanner:\n  backend: bluez\n  bluez_refresh_s: 2.5\n")
        #expect(configuration.scanner.blueZRefresh == 2_500_000)
        let backend = BlueZScannerConfiguration(configuration.scanner, adapter: "hci0", retriesMissingAdapter: true)
        #expect(backend.refreshInterval == 2_500_000)
        #expect(try scratch.load("scanner:\n  bluez_refresh_s: 0\n").scanner.blueZRefresh == 0)
        #expect(try scratch.load("scanner:\n  bluez_refresh_s: 3600\n").scanner.blueZRefresh == 3_600_000_000)
        #expect(ConfigKey.scannerBlueZRefresh.flag == nil)
        #expect(!ConfigKey.scannerBlueZRefresh.isLiveReloadable)
    }

    @Test(arguments: [
        ("0.5", "must be 0 (off) or between 1 and 3600 seconds, found 0.5"),
        ("3600.5", "must be 0 (off) or between 1 and 3600 seconds, found 3600.5"),
        ("-4", "must not be negative, found -4"),
        ("4s", "expected a number of seconds (like 5 or 2.5), found \"4s\""),
    ])
    func badValuesNameTheFileLineAndColumn(value: String, reason: String) {
        let scratch = ConfigScratch()
        let problems = scratch.problems("scanner:\n  backend: bluez\n  bluez_refresh_s: \(value)\n")
        #expect(problems.count == 1)
        let problem = problems.first
        #expect(problem?.file == scratch.configPath)
        #expect(problem?.key == "scanner.bluez_refresh_s")
        #expect(problem?.line == 3)
        #expect(problem?.column == 20)
        #expect(problem?.reason == reason)
        #expect(problem?.description == "\(scratch.configPath):3:20: scanner.bluez_refresh_s: \(reason)")
    }
}
