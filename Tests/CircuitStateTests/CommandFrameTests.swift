import BLEPayload
import CircuitState
import Testing

/// GeoRacing staff command frames, `[0xFF][command]` (docs/fusion.md, "Command frames").
@Suite struct CommandFrameTests {
    let hold = FusionConfiguration.defaultDeescalationHold

    @Test func evacuateIsACircuitWideEvacuationForThirtySeconds() {
        var engine = FusionEngine()
        #expect(engine.ingest(GeoRacingSignal(command: .evacuate), address: address(5), rssi: -70, at: 0) == .inserted)
        let state = engine.evaluate(at: 0)
        #expect(state.mode == .evacuation)
        #expect(state.decision.zone == nil)
        #expect(state.override?.key == .command(address: address(5)))
        #expect(engine.evaluate(at: 30 * second - 1).mode == .evacuation)
        #expect(engine.evaluate(at: 30 * second).decision == .undecided)
    }

    @Test func dangerIsARedFlag() {
        var engine = FusionEngine()
        engine.ingest(GeoRacingSignal(command: .danger), address: address(5), rssi: -70, at: 0)
        #expect(engine.evaluate(at: 0).mode == .redFlag)
    }

    /// Normal clears only its own sender's claim, after the de-escalation hold.
    @Test func normalClearsOnlyItsSendersClaim() {
        var engine = FusionEngine()
        engine.ingest(GeoRacingSignal(command: .evacuate), address: address(5), rssi: -70, at: 0)
        engine.ingest(GeoRacingSignal(command: .danger), address: address(6), rssi: -70, at: 0)
        #expect(
            engine.ingest(GeoRacingSignal(command: .normal), address: address(5), rssi: -70, at: second) == .cleared)
        #expect(engine.evaluate(at: second).mode == .evacuation)
        #expect(engine.evaluate(at: second + hold).mode == .redFlag)
        #expect(engine.activeKeys(at: second + hold) == [.command(address: address(6))])
    }

    /// A normal command from a sender with no claim changes nothing.
    @Test func normalFromAnotherSenderLeavesTheEvacuation() {
        var engine = FusionEngine()
        engine.ingest(GeoRacingSignal(command: .evacuate), address: address(5), rssi: -70, at: 0)
        engine.ingest(GeoRacingSignal(command: .normal), address: address(9), rssi: -70, at: second)
        #expect(engine.evaluate(at: 10 * second).mode == .evacuation)
    }

    /// A command names no zone, so a screen's zone list does not filter it.
    @Test func theZoneListDoesNotFilterACommand() {
        var engine = FusionEngine(configuration: FusionConfiguration(zones: [7]))
        engine.circuit(zone: 3, .redFlag, at: 0)
        engine.ingest(GeoRacingSignal(command: .evacuate), address: address(5), rssi: -70, at: 0)
        #expect(engine.counters.filteredZone == 1)
        #expect(engine.evaluate(at: 0).mode == .evacuation)
    }

    /// The same gates as any frame: the RSSI floor and the allow list.
    @Test func theRSSIFloorAndTheAllowListStillApply() {
        var engine = FusionEngine(configuration: FusionConfiguration(allow: AllowList(addresses: [address(1)])))
        #expect(
            engine.ingest(GeoRacingSignal(command: .evacuate), address: address(5), rssi: -60, at: 0)
                == .filtered(.allow))
        #expect(
            engine.ingest(GeoRacingSignal(command: .evacuate), address: address(1), rssi: -99, at: 0)
                == .filtered(.rssi))
        #expect(engine.evaluate(at: 0).decision == .undecided)
    }

    @Test func reportListsWithoutFusing() {
        var engine = FusionEngine(configuration: FusionConfiguration(commandFrames: .report))
        let outcome = engine.ingest(GeoRacingSignal(command: .evacuate), address: address(5), rssi: -70, at: 0)
        #expect(outcome == .filtered(.reportOnly))
        #expect(engine.counters.filteredReportOnly == 1)
        #expect(engine.evaluate(at: 0).decision == .undecided)
    }

    /// Switching to `report` drops the command claims in force; other claims stay.
    @Test func reconfiguringToReportDropsCommandClaims() {
        var engine = FusionEngine()
        engine.ingest(GeoRacingSignal(command: .evacuate), address: address(5), rssi: -70, at: 0)
        engine.circuit(zone: 2, .safetyCar, ttl: 60, at: 0)
        var configuration = engine.configuration
        configuration.commandFrames = .report
        engine.reconfigure(configuration)
        #expect(engine.counters.droppedByReconfiguration == 1)
        #expect(engine.evaluate(at: second).mode == .safetyCar)
    }

    @Test func keysDescribeAndSortBeforeStaffAndCircuitKeys() {
        #expect(OverrideKey.command(address: address(5)).description == "command @ C0:00:00:00:00:05")
        #expect(
            OverrideKey(signal: GeoRacingSignal(command: .danger), address: address(5)) == .command(address: address(5))
        )
    }
}
