import BLEPayload
import CircuitState
import Testing

/// The per-key claim rules (docs/fusion.md, "Claims"): de-escalation hold, TTL 0, contest.
@Suite struct ClaimTests {
    let hold = FusionConfiguration.defaultDeescalationHold
    let key = OverrideKey.circuit(zone: 1, address: address(1))

    /// An engine in which zone 1's beacon (`key`) claimed `mode` at 0.
    static func engine(claiming mode: GeoRacingMode, sequence: UInt16 = 500, ttl: UInt8 = 30) -> FusionEngine {
        var engine = FusionEngine()
        engine.circuit(mode, sequence: sequence, ttl: ttl, at: 0)
        return engine
    }

    @Test func aNewerNormalTakesEffectAfterTheHold() {
        var engine = Self.engine(claiming: .evacuation)
        #expect(engine.circuit(.normal, sequence: 501, ttl: 30, at: second) == .replaced)
        #expect(engine.evaluate(at: second).mode == .evacuation)
        #expect(engine.nextDeadline(after: second) == second + hold)
        #expect(engine.evaluate(at: second + hold - 1).mode == .evacuation)
        let after = engine.evaluate(at: second + hold)
        #expect(after.mode == .normal)
        #expect(after.override?.sequence == 501)
        #expect(after.override?.heldClaim == nil)
    }

    @Test func theSameSequenceWithALowerModeIsHeldToo() {
        var engine = Self.engine(claiming: .redFlag)
        #expect(engine.circuit(.normal, sequence: 500, ttl: 30, at: second) == .revised)
        let held = engine.evaluate(at: second)
        #expect(held.mode == .redFlag)
        #expect(held.override?.heldClaim?.mode == .redFlag)
        #expect(held.override?.claimInForce?.mode == .normal)
        #expect(engine.evaluate(at: second + hold).mode == .normal)
    }

    @Test func aHeldClaimEndsWithItsOwnExpiryWhenThatIsEarlier() {
        var engine = Self.engine(claiming: .redFlag, ttl: 2)
        engine.circuit(.normal, sequence: 501, ttl: 30, at: 2 * second - hold / 2)
        #expect(engine.nextDeadline(after: 2 * second - hold / 2) == 2 * second)
        #expect(engine.evaluate(at: 2 * second).mode == .normal)
    }

    @Test func escalationIsImmediateAndKeepsNothingBehind() {
        var engine = Self.engine(claiming: .safetyCar)
        #expect(engine.circuit(.redFlag, sequence: 501, ttl: 30, at: 1) == .replaced)
        let state = engine.evaluate(at: 1)
        #expect(state.mode == .redFlag)
        #expect(state.override?.heldClaim == nil)
    }

    @Test func aNewerTTLZeroClearsOnlyTheClaimInForceAfterTheHold() {
        var engine = Self.engine(claiming: .redFlag)
        #expect(engine.circuit(.redFlag, sequence: 501, ttl: 0, at: second) == .cleared)
        let held = engine.evaluate(at: second)
        #expect(held.mode == .redFlag)
        #expect(held.override?.claimInForce == nil)
        #expect(engine.evaluate(at: second + hold).decision == .undecided)
        #expect(engine.overrideCount == 0)
        #expect(engine.counters.cleared == 1)
    }

    @Test func afterAClearAnySequenceIsAcceptedAgain() {
        var engine = Self.engine(claiming: .redFlag)
        engine.circuit(.redFlag, sequence: 501, ttl: 0, at: second)
        #expect(engine.circuit(.safetyCar, sequence: 7, ttl: 30, at: 2 * second) == .inserted)
        #expect(engine.evaluate(at: 2 * second).mode == .safetyCar)
    }

    @Test func anOlderTTLZeroIsIgnoredAndLeavesTheContestedClaim() {
        var engine = Self.engine(claiming: .normal, sequence: 501)
        #expect(engine.circuit(.redFlag, sequence: 500, ttl: 10, at: 1) == .contested(started: true))
        #expect(engine.circuit(.redFlag, sequence: 500, ttl: 0, at: 2) == .ignoredOlder)
        #expect(engine.circuit(.normal, sequence: 499, ttl: 0, at: 3) == .ignoredOlder)
        let state = engine.evaluate(at: 3)
        #expect(state.mode == .redFlag)
        #expect(state.override?.isContested == true)
        #expect(engine.counters.olderIgnored == 2)
    }

    @Test func olderTTLZeroFramesAfterANewerNormalDoNotCutTheHold() {
        var engine = Self.engine(claiming: .redFlag)
        engine.circuit(.normal, sequence: 501, ttl: 30, at: second)
        #expect(engine.circuit(.redFlag, sequence: 500, ttl: 0, at: second + 1) == .ignoredOlder)
        #expect(engine.circuit(.normal, sequence: 499, ttl: 0, at: second + 2) == .ignoredOlder)
        #expect(engine.evaluate(at: second + hold - 1).mode == .redFlag)
        #expect(engine.evaluate(at: second + hold).mode == .normal)
    }

    @Test func aNewerTTLZeroKeepsHeldAndContestedClaims() {
        var engine = Self.engine(claiming: .safetyCar)
        engine.circuit(.normal, sequence: 501, ttl: 30, at: second)
        #expect(engine.circuit(.evacuation, sequence: 400, ttl: 30, at: second + 1) == .contested(started: true))
        #expect(engine.circuit(.normal, sequence: 502, ttl: 0, at: second + 2) == .cleared)
        let state = engine.evaluate(at: second + 2)
        #expect(state.mode == .evacuation)
        #expect(state.override?.heldClaim?.mode == .safetyCar)
        #expect(state.override?.claimInForce == nil)
        #expect(engine.evaluate(at: 20 * second).mode == .evacuation)
    }

    @Test func aLegitimateDeescalationTakesEffectAfterTheHold() {
        var engine = FusionEngine()
        var inputs: [(time: Int64, input: ScenarioInput)] = []
        let red = GeoRacingSignal.circuit(zone: 3, mode: .redFlag, sequence: 300, ttl: 10)
        let normal = GeoRacingSignal.circuit(zone: 3, mode: .normal, sequence: 301, ttl: 10)
        for tick in 0..<40 { inputs.append((Int64(tick) * 250_000, .beacon(red, address(3), rssi: -60))) }
        for tick in 40..<80 { inputs.append((Int64(tick) * 250_000, .beacon(normal, address(3), rssi: -60))) }
        let changes = drive(&engine, inputs).filter(\.changed)
        #expect(changes.map(\.mode) == [.redFlag, .normal, nil])
        #expect(changes.map(\.time) == [0, 10 * second + hold, 19_750_000 + 10 * second])
    }

    @Test func aReplayedOldRedAfterADeescalationShowsRedForItsTTL() {
        var engine = Self.engine(claiming: .redFlag, sequence: 300, ttl: 10)
        engine.circuit(.normal, sequence: 301, ttl: 60, at: second)
        #expect(engine.evaluate(at: 5 * second).mode == .normal)
        #expect(engine.circuit(.redFlag, sequence: 300, ttl: 10, at: 5 * second) == .contested(started: true))
        let replayed = engine.evaluate(at: 5 * second)
        #expect(replayed.mode == .redFlag)
        #expect(replayed.override?.isContested == true)
        #expect(engine.evaluate(at: 15 * second - 1).mode == .redFlag)
        let after = engine.evaluate(at: 15 * second)
        #expect(after.mode == .normal)
        #expect(after.override?.isContested == false)
        #expect(engine.counters.contests == 1)
    }

    /// The attack: a copy of the real beacon's address sends `normal` with a newer sequence.
    @Test func aSpoofedNewerNormalNeverHidesARepeatedEvacuation() {
        var engine = FusionEngine()
        var inputs: [(time: Int64, input: ScenarioInput)] = []
        let real = GeoRacingSignal.circuit(zone: 3, mode: .evacuation, sequence: 500, ttl: 10)
        let spoof = GeoRacingSignal.circuit(zone: 3, mode: .normal, sequence: 501, ttl: 255)
        for tick in 0..<240 {
            inputs.append((Int64(tick) * 250_000, .beacon(real, address(3), rssi: -60)))
            if tick >= 4 { inputs.append((Int64(tick) * 250_000 + 1, .beacon(spoof, address(3), rssi: -88))) }
        }
        let states = drive(&engine, inputs)
        let during = states.filter { $0.time < 60 * second }
        #expect(!during.isEmpty)
        #expect(during.allSatisfy { $0.mode == .evacuation })
        #expect(engine.counters.contests == 1)
        #expect(engine.counters.contestedFrames >= 200)
    }

    @Test func aContestedClaimYieldsOnlyToAMoreSevereFrame() {
        var engine = Self.engine(claiming: .normal, sequence: 600, ttl: 60)
        #expect(engine.circuit(.redFlag, sequence: 500, ttl: 10, at: 1) == .contested(started: true))
        #expect(engine.circuit(.safetyCar, sequence: 501, ttl: 60, at: 2) == .contested(started: false))
        #expect(engine.activeOverride(for: key, at: 2)?.contestedClaim?.mode == .redFlag)
        #expect(engine.evaluate(at: 2).mode == .redFlag)
        // The less severe contest waits in its own slot and shows once the red one lapses.
        #expect(engine.evaluate(at: 10 * second + 1).mode == .safetyCar)
        #expect(engine.circuit(.evacuation, sequence: 502, ttl: 5, at: 10 * second + 2) == .contested(started: false))
        #expect(engine.activeOverride(for: key, at: 10 * second + 2)?.contestedClaim?.mode == .evacuation)
        #expect(engine.counters.contests == 1)
    }

    @Test func anEquallySevereContestNeverShortensTheContest() {
        var engine = Self.engine(claiming: .normal, sequence: 600, ttl: 60)
        engine.circuit(.redFlag, sequence: 500, ttl: 30, at: 0)
        #expect(engine.circuit(.redFlag, sequence: 501, ttl: 1, at: second) == .contested(started: false))
        let contested = engine.activeOverride(for: key, at: second)?.contestedClaim
        #expect(contested?.sequence == 501)
        #expect(contested?.expiresAt == 30 * second)
        #expect(engine.circuit(.redFlag, sequence: 502, ttl: 60, at: 2 * second) == .contested(started: false))
        #expect(engine.activeOverride(for: key, at: 2 * second)?.contestedClaim?.expiresAt == 62 * second)
    }

    @Test func olderFramesNoMoreSevereThanTheClaimInForceAreIgnored() {
        var engine = Self.engine(claiming: .redFlag)
        #expect(engine.circuit(.safetyCar, sequence: 499, ttl: 10, at: 1) == .ignoredOlder)
        #expect(engine.circuit(.redFlag, sequence: 499, ttl: 10, at: 2) == .ignoredOlder)
        #expect(engine.circuit(.normal, sequence: 499, ttl: 255, at: 3) == .ignoredOlder)
        #expect(engine.activeOverride(for: key, at: 3)?.isContested == false)
    }

    /// A spoofer's short newer flag must not make the real beacon's older flag lapse with it.
    @Test func anOlderFlagThatOutlastsTheClaimInForceWaitsInReserve() {
        var engine = Self.engine(claiming: .redFlag, ttl: 10)
        #expect(engine.circuit(.evacuation, sequence: 600, ttl: 1, at: second) == .replaced)
        #expect(engine.circuit(.redFlag, sequence: 500, ttl: 10, at: second + 250_000) == .contested(started: true))
        #expect(engine.evaluate(at: second + 250_000).mode == .evacuation)
        let after = engine.evaluate(at: 2 * second)
        #expect(after.mode == .redFlag)
        #expect(after.override?.isContested == true)
    }

    /// The rule keeps one held claim ("replaced only by one at least as severe"); beacond
    /// keeps one per mode, which shows the same while the more severe one lasts, and never lets a
    /// short held claim of one mode take a longer one of another with it.
    @Test func heldClaimsOfEachModeLapseOnTheirOwn() {
        var engine = Self.engine(claiming: .evacuation)
        engine.circuit(.safetyCar, sequence: 501, ttl: 30, at: second)
        engine.circuit(.normal, sequence: 502, ttl: 30, at: second + hold / 2)
        let state = engine.evaluate(at: second + hold / 2)
        #expect(state.mode == .evacuation)
        #expect(state.override?.heldClaim?.mode == .evacuation)
        #expect(state.override?.heldClaim?.expiresAt == second + hold)
        #expect(engine.evaluate(at: second + hold).mode == .safetyCar)
        #expect(engine.evaluate(at: second + hold + hold / 2).mode == .normal)

    }

    /// A spoofer's short escalation must not take the real beacon's longer flag with it.
    @Test func aReplacedFlagThatWouldOutlastItsReplacementIsHeld() {
        var engine = FusionEngine(configuration: FusionConfiguration(deescalationHold: 5 * second))
        engine.circuit(.safetyCar, sequence: 500, ttl: 10, at: 0)
        #expect(engine.circuit(.redFlag, sequence: 501, ttl: 1, at: 1) == .replaced)
        #expect(engine.evaluate(at: 1).override?.heldClaim?.mode == .safetyCar)
        #expect(engine.evaluate(at: second).mode == .redFlag)
        #expect(engine.evaluate(at: second + 1).mode == .safetyCar)
        #expect(engine.evaluate(at: 5 * second + 1).decision == .undecided)
        // A repeat that lasts longer keeps nothing behind.
        engine.circuit(.safetyCar, sequence: 7, ttl: 10, at: 20 * second)
        engine.circuit(.safetyCar, sequence: 7, ttl: 10, at: 21 * second)
        #expect(engine.evaluate(at: 21 * second).override?.heldClaim == nil)
    }

    @Test func theHoldIsConfigurableAndAppliesOnReconfiguration() {
        var engine = FusionEngine(configuration: FusionConfiguration(deescalationHold: 5 * second))
        engine.circuit(.redFlag, sequence: 500, ttl: 30, at: 0)
        engine.circuit(.normal, sequence: 501, ttl: 30, at: second)
        #expect(engine.nextDeadline(after: second) == 6 * second)
        engine.reconfigure(FusionConfiguration(deescalationHold: 2 * second))
        #expect(engine.nextDeadline(after: second) == 3 * second)
        #expect(engine.evaluate(at: 3 * second).mode == .normal)
    }

    @Test func aKeyRanksAndIsKeptByTheClaimItPublishes() {
        var engine = FusionEngine(configuration: FusionConfiguration(maxEntries: 2))
        engine.circuit(zone: 1, .redFlag, sequence: 500, ttl: 30, at: 0)
        engine.circuit(zone: 1, .normal, sequence: 501, ttl: 30, at: 1)
        engine.circuit(zone: 2, .safetyCar, ttl: 30, from: address(2), at: 2)
        #expect(engine.circuit(zone: 3, .safetyCar, ttl: 30, from: address(3), at: 3) == .inserted)
        #expect(engine.activeKeys(at: 3) == [key, .circuit(zone: 3, address: address(3))])
        #expect(engine.evaluate(at: 3).override?.key == key)
    }

    @Test func aV2ContestCarriesItsOwnZone() {
        var engine = FusionEngine()
        engine.staff(source: 7, zone: 2, .normal, sequence: 50, ttl: 30, at: 0)
        #expect(engine.staff(source: 7, zone: 5, .redFlag, sequence: 49, ttl: 30, at: 1) == .contested(started: true))
        let state = engine.evaluate(at: 1)
        #expect(state.mode == .redFlag)
        #expect(state.zone == 5)
    }
}
