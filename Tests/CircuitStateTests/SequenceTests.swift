import BLEPayload
import CircuitState
import Testing

@Suite struct SequenceTests {
    @Test(arguments: [
        (new: UInt16(5), current: UInt16(5), expected: SequenceOrder.repeated),
        (6, 5, .newer),
        (4, 5, .older),
        (0, 65535, .newer),
        (65535, 0, .older),
        (5 &+ 32767, 5, .newer),
        (5 &+ 32768, 5, .older),
        (10, 65530, .newer),
    ])
    func serialArithmetic(new: UInt16, current: UInt16, expected: SequenceOrder) {
        #expect(SequenceOrder(new: new, current: current) == expected)
    }

    @Test func newerSequenceReplacesTheEntry() {
        var engine = FusionEngine()
        #expect(engine.circuit(.redFlag, sequence: 10, at: 0) == .inserted)
        #expect(engine.circuit(.normal, sequence: 11, at: second) == .replaced)
        let state = engine.evaluate(at: second + FusionConfiguration.defaultDeescalationHold)
        #expect(state.mode == .normal)
        #expect(state.override?.sequence == 11)
        #expect(engine.counters.accepted == 2)
    }

    @Test func repeatRefreshesReceptionTimeTTLAndContent() {
        var engine = FusionEngine()
        engine.circuit(.redFlag, sequence: 10, ttl: 10, temperature: 20, at: 0)
        #expect(engine.circuit(.safetyCar, sequence: 10, ttl: 20, temperature: 31, at: 5 * second) == .revised)
        let state = engine.evaluate(at: 5 * second + FusionConfiguration.defaultDeescalationHold)
        #expect(state.mode == .safetyCar)
        #expect(state.override?.temperature == 31)
        #expect(state.override?.receivedAt == 5 * second)
        #expect(state.override?.expiresAt == 25 * second)
        #expect(engine.evaluate(at: 25 * second - 1).mode == .safetyCar)
        #expect(engine.counters.repeats == 1)
    }

    @Test func olderSequenceIsIgnoredAndCountedWhileActive() {
        var engine = FusionEngine()
        engine.circuit(.redFlag, sequence: 10, at: 0)
        #expect(engine.circuit(.normal, sequence: 9, at: 1) == .ignoredOlder)
        #expect(engine.circuit(.normal, sequence: 10 &+ 32768, at: 2) == .ignoredOlder)
        let state = engine.evaluate(at: 2)
        #expect(state.mode == .redFlag)
        #expect(state.override?.sequence == 10)
        #expect(engine.counters.olderIgnored == 2)
        #expect(engine.circuit(.normal, sequence: 10 &+ 32767, at: 3) == .replaced)
    }

    @Test func sequenceWrapsFrom65535To0() {
        var engine = FusionEngine()
        engine.circuit(.safetyCar, sequence: 65535, at: 0)
        #expect(engine.circuit(.redFlag, sequence: 0, at: 1) == .replaced)
        #expect(engine.circuit(.safetyCar, sequence: 65535, ttl: 5, at: 2) == .ignoredOlder)
        #expect(engine.evaluate(at: 2).mode == .redFlag)
    }

    @Test func anySequenceIsAcceptedOnceTheEntryExpired() {
        var engine = FusionEngine()
        engine.circuit(.redFlag, sequence: 1000, ttl: 10, at: 0)
        #expect(engine.circuit(.normal, sequence: 5, ttl: 10, at: 10 * second - 1) == .ignoredOlder)
        #expect(engine.circuit(.normal, sequence: 5, ttl: 10, at: 10 * second) == .inserted)
        #expect(engine.evaluate(at: 10 * second).mode == .normal)
        // An older, more severe frame is no longer ignored: it contests the claim in force.
        #expect(engine.circuit(.redFlag, sequence: 4, at: 11 * second) == .contested(started: true))
        #expect(engine.evaluate(at: 11 * second).mode == .redFlag)
    }
}
