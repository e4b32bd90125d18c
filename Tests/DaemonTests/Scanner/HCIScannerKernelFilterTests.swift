import BLEPayload
import BeacondTestSupport
import Glibc
import Synchronization
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// The HCI scanner with its kernel filter (`scanner.kernel_filter`), on a fake controller whose
/// socketpair runs the filter in the kernel: other devices' reports are not read until a client
/// looks at every device; the silence watchdog listens for any device before it restarts.
@Suite struct HCIScannerKernelFilterTests {
    static let beacon: UInt64 = 0xC0_FF_EE_00_00_01
    static let phone: UInt64 = 0x4A_00_00_00_00_01

    static func beaconEvent(_ sequence: UInt16) -> [UInt8] {
        FakeController.legacyEvent([
            FakeController.report(beacon, data: FakeController.geoRacingData(zone: 2, sequence: sequence))
        ])
    }

    static func phoneEvent(_ index: UInt64 = 0) -> [UInt8] {
        FakeController.legacyEvent([FakeController.report(phone + index, data: [0x02, 0x01, 0x06])])
    }

    @Test func otherDevicesAreReadOnlyWhileAClientLooks() async throws {
        let demand = AllDevicesDemand(hold: 400_000)
        let filter = HCIKernelFilter(companyID: GeoRacingSignal.defaultCompanyID, demand: demand)
        let controller = FakeController()
        let harness = try await HCIHarness.up([controller], kernelFilter: filter)
        #expect(await waitUntil { harness.backend.filterCounters.current == .on })
        controller.inject(Self.phoneEvent())
        controller.inject(Self.beaconEvent(1))
        #expect(await harness.sink.waitForReports(1))
        #expect(harness.sink.reports.map(\.address.rawValue) == [Self.beacon])
        #expect(harness.backend.hciStatus.kernelFilter?.state == "on")

        // A look lifts it at once (the reader is woken), for the hold.
        #expect(demand.look() == 0)
        #expect(await waitUntil { harness.backend.filterCounters.current == .lifted })
        controller.inject(Self.phoneEvent(1))
        #expect(await harness.sink.waitForReports(2))
        #expect(harness.sink.reports.last?.address.rawValue == Self.phone + 1)
        #expect(harness.backend.hciStatus.kernelFilter?.lifts == 1)

        // The hold over, the next wake-up puts it back.
        try await Task.sleep(for: .milliseconds(450))
        controller.inject(Self.beaconEvent(2))
        #expect(await harness.sink.waitForReports(3))
        #expect(await waitUntil { harness.backend.filterCounters.current == .on })
        controller.inject(Self.phoneEvent(2))
        controller.inject(Self.beaconEvent(3))
        #expect(await harness.sink.waitForReports(4))
        #expect(
            harness.sink.reports.map(\.address.rawValue) == [Self.beacon, Self.phone + 1, Self.beacon, Self.beacon])
        #expect(await harness.stop() == nil)
        #expect(harness.backend.filterCounters.current == .off)
    }

    @Test func theWatchdogListensForAnyDeviceBeforeRestarting() async throws {
        let filter = HCIKernelFilter(
            companyID: GeoRacingSignal.defaultCompanyID, demand: AllDevicesDemand(), probeDuration: 300_000)
        let controller = FakeController()
        let harness = try HCIHarness([controller], kernelFilter: filter) { $0.silenceRestart = 300_000 }
        // Only phones on the air, every 30 ms, from a thread of its own.
        let done = TestFlag()
        let sink = harness.sink
        TestThread.start {
            let deadline = MonotonicClock.micros() + 20_000_000
            while sink.lastState?.0 != .up, MonotonicClock.micros() < deadline { usleep(1_000) }
            var index: UInt64 = 0
            while !done.isSet, MonotonicClock.micros() < deadline {
                index += 1
                controller.inject(Self.phoneEvent(index))
                usleep(30_000)
            }
        }
        harness.start()
        // A probe hears them: no restart, however many silence periods pass.
        #expect(await waitUntil(within: 10) { harness.backend.filterCounters.probes.load(ordering: .relaxed) >= 3 })
        #expect(harness.backend.counters.snapshot.restarts == 0)
        #expect(controller.commands.count == 5)
        // What the probes heard (the last one may be listening still).
        #expect(harness.sink.reports.count >= 2)
        done.set()
        #expect(await harness.stop() == nil)
    }

    @Test func silenceWithNoDeviceAtAllStillRestartsTheScan() async throws {
        let filter = HCIKernelFilter(
            companyID: GeoRacingSignal.defaultCompanyID, demand: AllDevicesDemand(), probeDuration: 200_000)
        let controller = FakeController()
        let started = MonotonicClock.micros()
        let harness = try await HCIHarness.up([controller], kernelFilter: filter) { $0.silenceRestart = 200_000 }
        #expect(await controller.waitForCommands(10))
        #expect(Array(controller.commands[5..<10]) == HCIHarness.setupLegacy)
        // The restart came after the silence and the probe, not before.
        #expect(MonotonicClock.micros() - started >= 400_000)
        #expect(harness.backend.counters.snapshot.restarts >= 1)
        #expect(harness.backend.filterCounters.probes.load(ordering: .relaxed) >= 1)
        #expect(await harness.stop() == nil)
    }

    @Test func aRecordingScannerReadsEverything() async throws {
        let directory = try HCIRecordingFiles.temporaryDirectory()
        defer { HCIRecordingFiles.remove(directory) }
        let recorder = try BTSnoopRecorder(
            path: directory + "/scan.btsnoop", maxBytes: 1 << 20, keep: 2, logger: HCITestLogger.quiet)
        let filter = HCIKernelFilter(companyID: GeoRacingSignal.defaultCompanyID, demand: AllDevicesDemand())
        let controller = FakeController()
        let harness = try await HCIHarness.up([controller], recorder: recorder, kernelFilter: filter)
        controller.inject(Self.phoneEvent())
        #expect(await harness.sink.waitForReports(1))
        #expect(harness.backend.filterCounters.current == .off)
        #expect(await harness.stop() == nil)
    }

    @Test func aTransportWithoutASocketReadsEverythingAndSaysWhy() async throws {
        let filter = HCIKernelFilter(companyID: GeoRacingSignal.defaultCompanyID, demand: AllDevicesDemand())
        let controller = FakeController()
        let harness = try await HCIHarness.up([controller], kernelFilter: filter) { _ in
        } opener: {
            FlakyTransport(controller.transport)
        }
        #expect(await waitUntil { harness.backend.filterCounters.current == .failed })
        #expect(harness.backend.hciStatus.kernelFilter?.failure?.contains("refused to attach") == true)
        controller.inject(Self.phoneEvent())
        #expect(await harness.sink.waitForReports(1))
        #expect(await harness.stop() == nil)
    }
}

@Suite struct AllDevicesDemandTests {
    final class FakeClock: Sendable {
        let now = Atomic<Int64>(1_000_000)
        func advance(_ micros: Int64) { now.add(micros, ordering: .relaxed) }
    }

    @Test func aLookLiftsForTheHoldAndWakesTheScannersOncePerStretch() throws {
        let clock = FakeClock()
        let demand = AllDevicesDemand(hold: 30_000_000) { clock.now.load(ordering: .relaxed) }
        let wake = try WakeSignal()
        demand.addListener(wake)
        #expect(!demand.isActive(at: clock.now.load(ordering: .relaxed)))
        #expect(demand.look() == 0)
        #expect(wake.isSignalled)
        wake.drain()
        clock.advance(1_500_000)
        // Within the stretch: how long it has been lifted, and no new wake-up.
        #expect(demand.look() == 1_500_000)
        #expect(!wake.isSignalled)
        #expect(demand.isActive(at: clock.now.load(ordering: .relaxed) + 29_000_000))
        #expect(!demand.isActive(at: clock.now.load(ordering: .relaxed) + 30_000_000))
        // The hold over: a new stretch begins, and wakes the scanners again.
        clock.advance(30_000_000)
        #expect(demand.look() == 0)
        #expect(wake.isSignalled)
        demand.removeListener(wake)
        wake.drain()
        clock.advance(60_000_000)
        demand.look()
        #expect(!wake.isSignalled)
        #expect(demand.looks == 4)
    }

    @Test func theStatusSaysHowLongOtherDevicesHaveBeenHeard() {
        let clock = FakeClock()
        let table = NearbyDeviceTable(demand: AllDevicesDemand { clock.now.load(ordering: .relaxed) })
        #expect(table.report(at: 0).counters.listening == 0)
        clock.advance(2_250_000)
        #expect(table.report(at: 0).counters.listening == 2.25)
        // Without a filter, nothing to say.
        #expect(NearbyDeviceTable().report(at: 0).counters.listening == nil)
        var writer = JSONWriter()
        table.report(at: 0).counters.render(into: &writer)
        #expect(String(decoding: writer.bytes, as: UTF8.self).contains(#""listening_s":2.250"#))
    }
}
