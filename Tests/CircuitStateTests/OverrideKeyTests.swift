import BLEPayload
import CircuitState
import Testing

@Suite struct OverrideKeyTests {
    @Test func twoBeaconsInOneZoneNeverSilenceEachOther() {
        var engine = FusionEngine()
        engine.circuit(zone: 3, .redFlag, sequence: 100, from: address(1), at: 0)
        #expect(engine.circuit(zone: 3, .normal, sequence: 200, from: address(2), at: 1) == .inserted)
        #expect(engine.activeOverrides(at: 1).count == 2)
        #expect(engine.evaluate(at: 1).override?.key == .circuit(zone: 3, address: address(1)))
        #expect(engine.circuit(zone: 3, .normal, sequence: 201, ttl: 0, from: address(2), at: 2) == .cleared)
        let afterHold = 2 + FusionConfiguration.defaultDeescalationHold
        #expect(engine.evaluate(at: afterHold).mode == .redFlag)
        #expect(engine.activeKeys(at: afterHold) == [.circuit(zone: 3, address: address(1))])
    }

    @Test func spoofedNewerSequenceFromAnotherAddressLeavesTheRealBeaconAlone() {
        var engine = FusionEngine()
        let real = address(1)
        engine.circuit(zone: 3, .redFlag, sequence: 100, from: real, at: 0)
        engine.circuit(zone: 3, .normal, sequence: 30_000, from: address(666), at: 1)
        #expect(engine.circuit(zone: 3, .redFlag, sequence: 101, from: real, at: 2) == .replaced)
        let realEntry = engine.activeOverrides(at: 2).first { $0.key == .circuit(zone: 3, address: real) }
        #expect(realEntry?.sequence == 101)
        #expect(engine.counters.olderIgnored == 0)
    }

    @Test func staffSignalsAreKeyedBySourceAndAddress() {
        var engine = FusionEngine()
        engine.staff(source: 7, zone: 1, .redFlag, sequence: 1, from: address(1), at: 0)
        #expect(engine.staff(source: 7, zone: 1, .normal, sequence: 9, from: address(2), at: 1) == .inserted)
        #expect(engine.staff(source: 7, zone: 2, .safetyCar, sequence: 2, from: address(1), at: 2) == .replaced)
        #expect(engine.circuit(zone: 7, .normal, sequence: 1, from: address(1), at: 3) == .inserted)
        let keys = Set(engine.activeKeys(at: 3))
        #expect(
            keys == [
                .staff(sourceID: 7, address: address(1)), .staff(sourceID: 7, address: address(2)),
                .circuit(zone: 7, address: address(1)),
            ])
        let afterHold = 2 + FusionConfiguration.defaultDeescalationHold
        _ = engine.evaluate(at: afterHold)
        let moved = engine.activeOverrides(at: afterHold).first { $0.key == .staff(sourceID: 7, address: address(1)) }
        #expect(moved?.zone == 2)
        #expect(moved?.mode == .safetyCar)
    }

    @Test func aBeaconThatChangesAddressLeavesItsOldEntryToExpire() {
        var engine = FusionEngine()
        engine.circuit(zone: 4, .normal, sequence: 1, ttl: 10, from: address(1), at: 0)
        engine.circuit(zone: 4, .redFlag, sequence: 2, ttl: 10, from: address(2), at: 1 * second)
        #expect(engine.evaluate(at: 1 * second).mode == .redFlag)
        engine.circuit(zone: 4, .normal, sequence: 3, ttl: 10, from: address(3), at: 2 * second)
        #expect(engine.evaluate(at: 2 * second).mode == .redFlag)
        #expect(engine.evaluate(at: 11 * second - 1).mode == .redFlag)
        let after = engine.evaluate(at: 11 * second)
        #expect(after.mode == .normal)
        #expect(after.override?.address == address(3))
    }
}
