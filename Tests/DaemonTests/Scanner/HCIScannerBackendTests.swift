import BLEPayload
import BeacondTestSupport
import Foundation
import Glibc
import Logging
import ServiceLifecycle
import Synchronization
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// A backend on fake controllers, started on its own thread, with fast retries.
final class HCIHarness: Sendable {
    struct Outcome: Sendable {
        var error: HCIScannerError?
    }

    let sink = RecordingSink()
    let adapter: FakeAdapter
    let backend: HCIScannerBackend
    private let outcome = Mutex<Outcome?>(nil)

    init(
        _ controllers: [FakeController] = [], recorder: BTSnoopRecorder? = nil, kernelFilter: HCIKernelFilter? = nil,
        logger: Logger = HCITestLogger.quiet, configure: (inout HCIScannerConfiguration) -> Void = { _ in },
        opener: HCIScannerBackend.Opener? = nil
    ) throws {
        var configuration = HCIScannerConfiguration(silenceRestart: 0)
        configuration.retryInitial = 20_000
        configuration.retryMax = 80_000
        configuration.commandTimeout = 1_000_000
        configure(&configuration)
        adapter = FakeAdapter(controllers)
        backend = try HCIScannerBackend(
            configuration: configuration, sink: sink, recorder: recorder, kernelFilter: kernelFilter, logger: logger,
            opener: opener ?? adapter.opener)
    }

    deinit { backend.stop() }

    func start() {
        backend.start { [self] error in outcome.withLock { $0 = Outcome(error: error) } }
    }

    /// A harness (the arguments are `init`'s) whose backend is started and up, as its sink saw
    /// (expected).
    static func up(
        _ controllers: [FakeController] = [], recorder: BTSnoopRecorder? = nil, kernelFilter: HCIKernelFilter? = nil,
        logger: Logger = HCITestLogger.quiet, configure: (inout HCIScannerConfiguration) -> Void = { _ in },
        opener: HCIScannerBackend.Opener? = nil, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> HCIHarness {
        let harness = try HCIHarness(
            controllers, recorder: recorder, kernelFilter: kernelFilter, logger: logger, configure: configure,
            opener: opener)
        harness.start()
        #expect(await harness.sink.waitForState(.up), sourceLocation: sourceLocation)
        return harness
    }

    /// Waits for the reader thread to end by itself; nil if it did not.
    func end(within seconds: Double = 5) async -> Outcome? {
        _ = await waitUntil(within: seconds) { outcome.withLock { $0 != nil } }
        return outcome.withLock { $0 }
    }

    /// Requests a stop and waits for the thread; the error it ended with.
    func stop() async -> HCIScannerError? {
        backend.stop()
        guard let outcome = await end() else {
            Issue.record("the reader thread did not stop")
            return nil
        }
        return outcome.error
    }

    static let setupLegacy = [
        HCICommand(opcode: 0x2003, parameters: []),
        HCICommand(opcode: 0x1002, parameters: []),
        HCICommand(opcode: 0x200C, parameters: [0x00, 0x00]),
        HCICommand(opcode: 0x200B, parameters: [0x00, 0xA0, 0x00, 0xA0, 0x00, 0x00, 0x00]),
        HCICommand(opcode: 0x200C, parameters: [0x01, 0x00]),
    ]
}

@Suite struct HCIScannerSetupTests {
    @Test func legacySetupSendsExactlyTheseCommandsAndTeardownDisables() async throws {
        let controller = FakeController(.legacy)
        let harness = try await HCIHarness.up([controller])
        #expect(controller.commands == HCIHarness.setupLegacy)
        #expect(harness.backend.mode == .legacy)
        #expect(harness.sink.lastState?.1 == "scanning on hci0 (legacy, passive)")
        #expect(await harness.stop() == nil)
        #expect(controller.commands.count == 6)
        #expect(controller.commands.last == HCICommand(opcode: 0x200C, parameters: [0x00, 0x00]))
        #expect(harness.sink.lastState?.0 == ScannerStatus.State.none)
    }

    @Test func extendedSetupWhenFeatureBit12AndOctet37Bits5And6AreSet() async throws {
        let controller = FakeController(.extended)
        let harness = try HCIHarness([controller]) {
            $0.active = true
            $0.interval = 200_000
            $0.window = 50_000
        }
        harness.start()
        #expect(await harness.sink.waitForState(.up))
        #expect(
            controller.commands == [
                HCICommand(opcode: 0x2003, parameters: []),
                HCICommand(opcode: 0x1002, parameters: []),
                HCICommand(opcode: 0x2042, parameters: [0x00, 0x00, 0x00, 0x00, 0x00, 0x00]),
                // Own address public, accept all, LE 1M; active, 320 × 0.625 ms, 80 × 0.625 ms.
                HCICommand(opcode: 0x2041, parameters: [0x00, 0x00, 0x01, 0x01, 0x40, 0x01, 0x50, 0x00]),
                HCICommand(opcode: 0x2042, parameters: [0x01, 0x00, 0x00, 0x00, 0x00, 0x00]),
            ])
        #expect(harness.backend.mode == .extended)
        #expect(harness.sink.lastState?.1 == "scanning on hci0 (extended, active)")
        #expect(await harness.stop() == nil)
        #expect(
            controller.commands.last == HCICommand(opcode: 0x2042, parameters: [0x00, 0x00, 0x00, 0x00, 0x00, 0x00]))
    }

    /// (feature byte 1, commands octet 37): only 0x10 with 0x60 may use the extended commands.
    @Test(arguments: [(UInt8(0x10), UInt8(0x20)), (0x10, 0x40), (0x10, 0x00), (0x00, 0x60), (0xEF, 0xFF)])
    func anythingLessStaysLegacy(feature: UInt8, octet37: UInt8) async throws {
        var script = FakeController.Script()
        script.leFeatures[1] = feature
        script.supportedCommands[37] = octet37
        let controller = FakeController(script)
        let harness = try await HCIHarness.up([controller])
        #expect(controller.commands == HCIHarness.setupLegacy)
        #expect(await harness.stop() == nil)
    }

    @Test func commandDisallowedOnEnableGivesTheBlueZHint() async throws {
        var script = FakeController.Script()
        script.status = { $0.opcode == 0x200C && $0.parameters.first == 1 ? HCIStatus.commandDisallowed : 0 }
        let harness = try HCIHarness([FakeController(script)]) { $0.retriesMissingAdapter = false }
        harness.start()
        let outcome = await harness.end()
        #expect(outcome?.error == .scanBusy(adapter: "hci0", opcode: 0x200C))
        #expect(
            outcome?.error?.description.contains("use --backend bluez, or stop discovery (bluetoothctl scan off)")
                == true)
    }

    @Test func theDaemonReportsABusyAdapterAsDownAndKeepsTrying() async throws {
        var script = FakeController.Script()
        script.status = { $0.opcode == 0x200C && $0.parameters.first == 1 ? HCIStatus.commandDisallowed : 0 }
        let harness = try HCIHarness([FakeController(script)])
        harness.start()
        #expect(
            await harness.sink.waitForState(.down) {
                $0.contains("bluetoothctl scan off") && $0.contains("retrying in")
            })
        #expect(await harness.stop() == nil)
    }

    @Test func commandDisallowedOnDisableIsTolerated() async throws {
        var script = FakeController.Script()
        script.status = { $0.opcode == 0x200C && $0.parameters.first == 0 ? HCIStatus.commandDisallowed : 0 }
        let controller = FakeController(script)
        let harness = try await HCIHarness.up([controller])
        #expect(await harness.stop() == nil)
        #expect(controller.commands.count == 6)
        #expect(!harness.sink.states.contains { $0.0 == .down })
    }

    @Test func aCommandTimeoutNamesTheOpcode() async throws {
        var script = FakeController.Script()
        script.status = { $0.opcode == 0x200B ? nil : 0 }
        let harness = try HCIHarness([FakeController(script)]) {
            $0.retriesMissingAdapter = false
            $0.commandTimeout = 100_000
        }
        harness.start()
        let error = await harness.end()?.error
        #expect(error == .commandTimeout(adapter: "hci0", opcode: 0x200B, timeout: 100_000))
        #expect(error?.description == "hci0 did not answer LE Set Scan Parameters (0x200B) within 0.1 s")
    }

    @Test func aFailingCommandStatusIsAnError() async throws {
        var script = FakeController.Script()
        script.status = { $0.opcode == 0x200B ? 0x12 : 0 }
        script.answerWithCommandStatus = { $0.opcode == 0x200B }
        let harness = try HCIHarness([FakeController(script)]) { $0.retriesMissingAdapter = false }
        harness.start()
        #expect(await harness.end()?.error == .commandFailed(adapter: "hci0", opcode: 0x200B, status: 0x12))
    }

    @Test func aControllerWithoutLEIsNamed() async throws {
        var script = FakeController.Script()
        script.status = { $0.opcode == 0x2003 ? HCIStatus.unknownCommand : 0 }
        let harness = try HCIHarness([FakeController(script)]) { $0.retriesMissingAdapter = false }
        harness.start()
        #expect(await harness.end()?.error == .notLowEnergy(adapter: "hci0", status: HCIStatus.unknownCommand))
    }
}

@Suite struct HCIScannerStartErrorTests {
    @Test(arguments: [
        HCIScannerError.permissionDenied(adapter: "hci0", operation: "open its raw HCI socket"),
        .leMetaFiltered(adapter: "hci0"),
    ])
    func permanentErrorsMakeRunThrowEvenInTheDaemon(_ failure: HCIScannerError) async throws {
        let opener: HCIScannerBackend.Opener = { () throws(HCIScannerError) -> any HCITransport in throw failure }
        let harness = try HCIHarness(opener: opener)
        await #expect(throws: failure) { try await harness.backend.run() }
        #expect(harness.sink.lastState?.0 == .down)
        #expect(harness.sink.lastState?.1 == failure.description)
    }

    @Test func theDaemonWaitsForAMissingAdapter() async throws {
        let harness = try HCIHarness()
        harness.start()
        #expect(
            await harness.sink.waitForState(.down) {
                $0 == "no Bluetooth adapter named hci0 (the kernel has none); retrying in 0.02 s"
            })
        // Backoff doubles up to the maximum.
        #expect(await harness.sink.waitForState(.down) { $0.hasSuffix("retrying in 0.08 s") })
        #expect(harness.adapter.openCount >= 3)
        harness.adapter.plugIn(FakeController())
        #expect(await harness.sink.waitForState(.up))
        #expect(harness.backend.counters.snapshot.reconnects == 0)
        #expect(await harness.stop() == nil)
    }

    /// A kiosk installed before its dongle is plugged in: the kernel has no Bluetooth until the
    /// module loads with the adapter. The daemon reports the scanner down and waits; `scan` exits.
    @Test func theDaemonWaitsForBluetoothToArriveInTheKernel() async throws {
        let kernel = Mutex<FakeAdapter?>(nil)
        let opener: HCIScannerBackend.Opener = { () throws(HCIScannerError) -> any HCITransport in
            guard let adapter = kernel.withLock({ $0 }) else { throw .bluetoothUnavailable }
            return try adapter.opener()
        }
        let harness = try HCIHarness(opener: opener)
        harness.start()
        #expect(
            await harness.sink.waitForState(.down) {
                $0 == "\(HCIScannerError.bluetoothUnavailable); retrying in 0.02 s"
            })
        #expect(await harness.sink.waitForState(.down) { $0.hasSuffix("retrying in 0.08 s") })
        harness.adapter.plugIn(FakeController())
        kernel.withLock { $0 = harness.adapter }
        #expect(await harness.sink.waitForState(.up))
        #expect(await harness.stop() == nil)

        let scanTool = try HCIHarness(configure: { $0.retriesMissingAdapter = false }, opener: opener)
        kernel.withLock { $0 = nil }
        await #expect(throws: HCIScannerError.bluetoothUnavailable) { try await scanTool.backend.run() }
    }

    @Test func theScanToolFailsOnAMissingAdapter() async throws {
        let harness = try HCIHarness { $0.retriesMissingAdapter = false }
        await #expect(throws: HCIScannerError.noAdapter(adapter: "hci0", known: [])) {
            try await harness.backend.run()
        }
        #expect(harness.adapter.openCount == 1)
    }

    @Test func aBadConfigurationIsRejectedUpFront() async {
        #expect(throws: HCIScannerError.self) {
            _ = try HCIHarness { $0.window = $0.interval + 1 }
        }
    }
}
