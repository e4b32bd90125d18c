import BLEPayload
import BeacondTestSupport
import Logging
import Synchronization
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// The transmitter's hci backend against a scripted controller (docs/beacon.md, "The radio").
@Suite struct HCIAdvertiserTests {
    static let frame = GeoRacingSignal.circuit(zone: 7, mode: .redFlag, sequence: 3).advertisingData()

    static func advertiser(_ adapter: FakeAdapter) throws -> HCIAdvertiser {
        var configuration = HCIAdvertiser.Configuration(adapter: "hci0")
        configuration.retryInitial = 20_000
        configuration.retryMax = 80_000
        configuration.commandTimeout = 1_000_000
        return try HCIAdvertiser(configuration: configuration, opener: adapter.opener, logger: HCITestLogger.quiet)
    }

    static func opcodes(_ controller: FakeController) -> [UInt16] { controller.commands.map(\.opcode) }

    @Test func legacyCommandsOnAFourPointXController() async throws {
        let controller = FakeController(.legacy)
        let advertiser = try Self.advertiser(FakeAdapter([controller]))
        let run = Task { try await advertiser.run() }
        advertiser.set(Self.frame)
        #expect(await waitUntil { advertiser.state == .advertising(mode: "legacy") })
        // Features, commands, the disable of whatever was on; then disable, parameters, data, enable.
        #expect(
            Self.opcodes(controller) == [
                HCIOpcode.leReadLocalSupportedFeatures, HCIOpcode.readLocalSupportedCommands,
                HCIOpcode.leSetAdvertisingEnable, HCIOpcode.leSetAdvertisingEnable,
                HCIOpcode.leSetAdvertisingParameters, HCIOpcode.leSetAdvertisingData, HCIOpcode.leSetAdvertisingEnable,
            ])
        let commands = controller.commands
        try #require(commands.count == 7)
        // 100 ms is 160 units; ADV_NONCONN_IND; public address; all three channels.
        #expect(commands[4].parameters == [0xA0, 0x00, 0xA0, 0x00, 0x03, 0x00, 0, 0, 0, 0, 0, 0, 0, 0x07, 0x00])
        #expect(commands[5].parameters.count == 32)
        #expect(commands[5].parameters[0] == UInt8(Self.frame.count))
        #expect(Array(commands[5].parameters[1...Self.frame.count]) == Self.frame)
        #expect(commands[6].parameters == [0x01])

        // A change: disable, data, enable; the parameters are not sent again.
        let next = GeoRacingSignal.circuit(zone: 7, mode: .normal, sequence: 4).advertisingData()
        advertiser.set(next)
        try #require(await controller.waitForCommands(10))
        #expect(
            Array(Self.opcodes(controller)[7...]) == [
                HCIOpcode.leSetAdvertisingEnable, HCIOpcode.leSetAdvertisingData, HCIOpcode.leSetAdvertisingEnable,
            ])
        #expect(advertiser.frames == 2)

        // Silence disables; a stop sends nothing more.
        advertiser.set(nil)
        #expect(await waitUntil { advertiser.state == .idle })
        #expect(controller.commands.last == HCICommand(opcode: HCIOpcode.leSetAdvertisingEnable, parameters: [0x00]))
        let count = controller.commands.count
        advertiser.stop()
        try await run.value
        #expect(controller.commands.count == count)
        #expect(advertiser.state == .stopped)
    }

    @Test func extendedCommandsWithALegacyPDUOnAFivePointXController() async throws {
        var script = FakeController.Script.extended
        script.supportedCommands[36] = 0x2C
        let controller = FakeController(script)
        let advertiser = try Self.advertiser(FakeAdapter([controller]))
        let run = Task { try await advertiser.run() }
        advertiser.set(Self.frame)
        #expect(await waitUntil { advertiser.state == .advertising(mode: "extended") })
        let commands = controller.commands
        let handle = HCIAdvertisingSetup.handle
        let parameters = try #require(commands.first { $0.opcode == HCIOpcode.leSetExtendedAdvertisingParameters })
        #expect(parameters.parameters.count == 25)
        #expect(Array(parameters.parameters[0...8]) == [handle, 0x10, 0x00, 0xA0, 0x00, 0x00, 0xA0, 0x00, 0x00])
        let data = try #require(commands.first { $0.opcode == HCIOpcode.leSetExtendedAdvertisingData })
        #expect(data.parameters == [handle, 0x03, 0x01, UInt8(Self.frame.count)] + Self.frame)
        #expect(
            commands.last
                == HCICommand(
                    opcode: HCIOpcode.leSetExtendedAdvertisingEnable, parameters: [0x01, 0x01, handle, 0, 0, 0]))
        // A stop disables this set only, and frees it.
        advertiser.stop()
        try await run.value
        #expect(
            Array(controller.commands.suffix(2)) == [
                HCICommand(
                    opcode: HCIOpcode.leSetExtendedAdvertisingEnable, parameters: [0x00, 0x01, handle, 0, 0, 0]),
                HCICommand(opcode: HCIOpcode.leRemoveAdvertisingSet, parameters: [handle]),
            ])
    }

    /// Extended advertising needs the feature bit and the commands: either alone is legacy.
    @Test func theModeNeedsTheFeatureAndTheCommands() {
        var features = [UInt8](repeating: 0, count: 8)
        var commands = [UInt8](repeating: 0, count: 64)
        #expect(HCIAdvertisingSetup.mode(leFeatures: features, supportedCommands: commands) == .legacy)
        features[1] = 0x10
        #expect(HCIAdvertisingSetup.mode(leFeatures: features, supportedCommands: commands) == .legacy)
        commands[36] = 0x28
        #expect(HCIAdvertisingSetup.mode(leFeatures: features, supportedCommands: commands) == .legacy)
        commands[36] = 0x2C
        #expect(HCIAdvertisingSetup.mode(leFeatures: features, supportedCommands: commands) == .extended)
        #expect(HCIAdvertisingSetup.mode(leFeatures: features, supportedCommands: nil) == .legacy)
        #expect(HCIAdvertisingSetup.units(interval: 100_000) == 160)
        #expect(HCIAdvertisingSetup.units(interval: 1_000) == 0x20)
        #expect(HCIAdvertisingSetup.units(interval: 60_000_000) == 0x4000)
    }

    /// The adapter goes away: the transmitter says so, reopens it, and advertises the latest frame again.
    @Test func anAdapterLostIsReopenedAndTheFrameSentAgain() async throws {
        let first = FakeController(.legacy)
        let adapter = FakeAdapter([first])
        let advertiser = try Self.advertiser(adapter)
        let run = Task { try await advertiser.run() }
        advertiser.set(Self.frame)
        #expect(await waitUntil { advertiser.state == .advertising(mode: "legacy") })
        first.close()
        #expect(
            await waitUntil {
                if case .down = advertiser.state { return true }
                return false
            })
        let second = FakeController(.legacy)
        adapter.plugIn(second)
        #expect(await waitUntil { advertiser.state == .advertising(mode: "legacy") && advertiser.restarts == 1 })
        let data = try #require(second.commands.first { $0.opcode == HCIOpcode.leSetAdvertisingData })
        #expect(Array(data.parameters[1...Self.frame.count]) == Self.frame)
        advertiser.stop()
        try await run.value
    }

    /// A controller that refuses the data says why, in the state, and the transmitter retries.
    @Test func aRefusedCommandIsReportedAndRetried() async throws {
        var script = FakeController.Script.legacy
        script.status = { $0.opcode == HCIOpcode.leSetAdvertisingParameters ? 0x12 : HCIStatus.success }
        // One refusing controller per attempt, so every retry fails the same way.
        let controllers = (0..<100).map { _ in FakeController(script) }
        let advertiser = try Self.advertiser(FakeAdapter(controllers))
        let run = Task { try await advertiser.run() }
        advertiser.set(Self.frame)
        #expect(
            await waitUntil {
                if case .down(let reason) = advertiser.state {
                    return reason.contains("Invalid HCI Command Parameters")
                }
                return false
            })
        advertiser.stop()
        try await run.value
    }
}
