import BeacondTestSupport
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// What the real kernel showed under QEMU (Tests/Stack, `make test-stack`) that the fake
/// controller had wrong: the kernel says an adapter went down only on a raw socket bound to no
/// adapter, and when it brings the adapter up again it resets the controller, scan off, with
/// nothing else on the adapter's socket. And btvirt's 5.2 controller answers an extended scan of
/// a legacy advertiser with legacy LE Advertising Reports (subevent 0x02).
@Suite struct HCIScannerKernelNoticeTests {
    @Test func theDownNoticeOnTheUnboundSocketIsALoss() async throws {
        let controller = FakeController(deviceID: 1)
        let harness = try await HCIHarness.up([controller])
        // Another adapter going down changes nothing.
        controller.injectDeviceEvent(4, device: 2)
        controller.inject(FakeController.legacyEvent([FakeController.report(7, data: [])]))
        #expect(await harness.sink.waitForReports(1))
        #expect(!harness.sink.states.contains { $0.0 == .down })
        controller.injectDeviceEvent(4, device: 1)
        #expect(await harness.sink.waitForState(.down) { $0.hasPrefix("adapter hci0 is gone (it was brought down)") })
        #expect(await harness.stop() == nil)
    }

    @Test func aResetTheBackendDidNotSendStartsTheScanOver() async throws {
        let first = FakeController(deviceID: 1)
        let second = FakeController(deviceID: 1)
        let harness = try await HCIHarness.up([first, second])
        let upAt = harness.sink.states.count
        // Command Complete for HCI Reset (0x0C03), success: the kernel's, not the backend's.
        first.inject([0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00])
        #expect(
            await harness.sink.waitForState(.down, after: upAt) {
                $0.hasPrefix("adapter hci0 is gone (the kernel reset the controller)")
            })
        #expect(await harness.sink.waitForState(.up, after: upAt))
        #expect(second.commands == HCIHarness.setupLegacy)
        #expect(await harness.stop() == nil)
    }

    @Test func theKernelsDeviceNoticesAreNotRecorded() async throws {
        let directory = try HCIRecordingFiles.temporaryDirectory()
        defer { HCIRecordingFiles.remove(directory) }
        let path = directory + "/scan.btsnoop"
        let recorder = try BTSnoopRecorder(path: path, maxBytes: 1 << 20, keep: 2, logger: HCITestLogger.quiet)
        let controller = FakeController(deviceID: 1)
        let harness = try await HCIHarness.up([controller], recorder: recorder)
        controller.injectDeviceEvent(4, device: 2)
        controller.inject(FakeController.legacyEvent([FakeController.report(0xA1, data: [0x02, 0x01, 0x06])]))
        #expect(await harness.sink.waitForReports(1))
        #expect(await harness.stop() == nil)
        let records = try HCIRecordingFiles.records(path)
        #expect(!records.isEmpty)
        #expect(!records.contains { $0.bytes.count > 1 && $0.bytes[1] == 0xFD })
        #expect(try HCIRecordingFiles.reportAddresses(path) == [0xA1])
    }

    @Test func anExtendedScanTakesLegacyReports() async throws {
        let controller = FakeController(.extended)
        let harness = try await HCIHarness.up([controller])
        #expect(harness.backend.mode == .extended)
        controller.inject(FakeController.legacyEvent([FakeController.report(7, rssi: 127, data: [0x02, 0x01, 0x06])]))
        #expect(await harness.sink.waitForReports(1))
        // 127: "not available", as btvirt's controllers report it.
        #expect(harness.sink.reports.first?.rssi == nil)
        #expect(await harness.stop() == nil)
    }
}
