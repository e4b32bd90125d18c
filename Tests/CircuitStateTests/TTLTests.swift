import BLEPayload
import CircuitState
import Testing

@Suite struct TTLTests {
    @Test func ttlZeroClearsTheKeyAfterTheHold() {
        var engine = FusionEngine()
        engine.circuit(.redFlag, sequence: 5, ttl: 30, at: 0)
        #expect(engine.circuit(.redFlag, sequence: 6, ttl: 0, at: second) == .cleared)
        let afterHold = second + FusionConfiguration.defaultDeescalationHold
        #expect(engine.evaluate(at: afterHold - 1).mode == .redFlag)
        let state = engine.evaluate(at: afterHold)
        #expect(state.decision == .undecided)
        #expect(engine.activeOverrides(at: afterHold).isEmpty)
        #expect(engine.counters.cleared == 1)
    }

    @Test func aRepeatWithTTLZeroClearsToo() {
        var engine = FusionEngine()
        engine.circuit(.redFlag, sequence: 5, ttl: 30, at: 0)
        #expect(engine.circuit(.redFlag, sequence: 5, ttl: 0, at: 1) == .cleared)
        _ = engine.evaluate(at: 1 + FusionConfiguration.defaultDeescalationHold)
        #expect(engine.overrideCount == 0)
    }

    @Test func anOlderTTLZeroDoesNotClear() {
        var engine = FusionEngine()
        engine.circuit(.redFlag, sequence: 5, ttl: 30, at: 0)
        #expect(engine.circuit(.redFlag, sequence: 4, ttl: 0, at: 1) == .ignoredOlder)
        #expect(engine.evaluate(at: 1).mode == .redFlag)
    }

    @Test func ttlIsCappedAtMaxTTL() {
        var engine = FusionEngine()
        engine.circuit(.redFlag, ttl: 255, at: 7)
        #expect(engine.activeOverrides(at: 7).first?.expiresAt == 7 + 120 * second)

        var capped = FusionEngine(configuration: FusionConfiguration(maxTTL: 30 * second))
        capped.circuit(zone: 1, .redFlag, ttl: 200, at: 0)
        capped.circuit(zone: 2, .redFlag, ttl: 20, at: 0)
        #expect(capped.activeOverrides(at: 0).map(\.expiresAt).sorted() == [20 * second, 30 * second])
    }

    @Test func anOverrideIsActiveUntilJustBeforeItsExpiry() {
        var engine = FusionEngine()
        let start: Int64 = 1_234
        engine.circuit(.redFlag, ttl: 10, at: start)
        #expect(engine.nextDeadline(after: start) == start + 10 * second)
        #expect(engine.evaluate(at: start).changed)
        let before = engine.evaluate(at: start + 10 * second - 1)
        #expect(before.mode == .redFlag)
        #expect(!before.changed)
        let at = engine.evaluate(at: start + 10 * second)
        #expect(at.decision == .undecided)
        #expect(at.changed)
        #expect(engine.nextDeadline(after: start + 10 * second) == nil)
        #expect(engine.counters.expired == 1)
    }

    @Test func aRefreshMovesTheDeadline() {
        var engine = FusionEngine()
        engine.circuit(.redFlag, sequence: 1, ttl: 10, at: 0)
        engine.circuit(.redFlag, sequence: 1, ttl: 10, at: 4 * second)
        #expect(engine.nextDeadline(after: 4 * second) == 14 * second)
        #expect(engine.evaluateDeadlines(before: .max).map(\.time) == [14 * second])
    }

    @Test func theNextDeadlineIsTheEarliestExpiryOrStaleness() {
        var engine = FusionEngine()
        #expect(engine.nextDeadline(after: 0) == nil)
        engine.circuit(zone: 1, .redFlag, ttl: 20, at: 0)
        engine.remoteFetched(RemoteSnapshot(mode: "RED"), at: 0)
        engine.circuit(zone: 2, .normal, ttl: 30, at: 0)
        #expect(engine.nextDeadline(after: 0) == 15 * second)
        #expect(engine.nextDeadline(after: 15 * second) == 20 * second)
        #expect(engine.nextDeadline(after: 25 * second) == 30 * second)
        #expect(engine.nextDeadline(after: 30 * second) == nil)
        #expect(engine.evaluateDeadlines(before: 30 * second).map(\.time) == [15 * second, 20 * second])
        #expect(engine.evaluateDeadlines(before: .max).map(\.time) == [30 * second])
    }

    @Test func expiryIsAnEventOfItsOwn() {
        var engine = FusionEngine()
        engine.circuit(zone: 1, .redFlag, ttl: 5, at: 0)
        engine.circuit(zone: 2, .safetyCar, ttl: 8, at: 0)
        #expect(engine.evaluate(at: 0).mode == .redFlag)
        let states = engine.evaluateDeadlines(before: .max)
        #expect(states.map(\.time) == [5 * second, 8 * second])
        #expect(states.map(\.mode) == [.safetyCar, nil])
        #expect(states.map(\.changed) == [true, true])
    }

    @Test func aRefreshAtTheExpiryInstantDoesNotFlicker() {
        var engine = FusionEngine()
        let states = drive(
            &engine,
            [
                (0, .beacon(.circuit(zone: 1, mode: .redFlag, sequence: 1, ttl: 10), address(1), rssi: -60)),
                (10 * second, .beacon(.circuit(zone: 1, mode: .redFlag, sequence: 1, ttl: 10), address(1), rssi: -60)),
            ])
        #expect(states.map(\.time) == [0, 10 * second, 20 * second])
        #expect(states.map(\.mode) == [.redFlag, .redFlag, nil])
        #expect(states.map(\.changed) == [true, false, true])
    }

    @Test func timeNeverRunsBackwards() {
        var engine = FusionEngine()
        engine.circuit(.redFlag, ttl: 10, at: 20 * second)
        #expect(engine.circuit(zone: 2, .normal, ttl: 10, at: 5 * second) == .inserted)
        let late = engine.activeOverrides(at: 20 * second).first { $0.zone == 2 }
        #expect(late?.receivedAt == 20 * second)
        #expect(engine.evaluate(at: 0).time == 20 * second)
    }
}
