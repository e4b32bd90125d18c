import BLEPayload
import CircuitState
import Testing

@Suite struct RemoteStateTests {
    @Test(arguments: [
        ("NORMAL", TrackMode.normal), ("normal", .normal), ("Green", .normal), ("GREEN_FLAG", .normal),
        ("green_flag", .normal), ("YELLOW", .yellowFlag), ("yellow_flag", .yellowFlag), ("VSC", .vsc),
        ("vsc", .vsc), ("SC", .safetyCar), ("Safety_Car", .safetyCar), ("RED", .redFlag), ("red_FLAG", .redFlag),
        ("EVACUATION", .evacuation), ("Evacuation", .evacuation), ("GREEN FLAG", .normal), ("SAFETY-CAR", .safetyCar),
        (" RED", .redFlag), ("RED ", .redFlag), ("evacuat\u{0131}on", .evacuation),
    ])
    func knownRemoteModes(name: String, mode: TrackMode) {
        #expect(TrackMode(remoteName: name) == mode)
        #expect(RemoteSnapshot(mode: name).trackMode == mode)
    }

    @Test(arguments: ["", " ", "unknown", "REDFLAG", "EVAC", "🟥", "EMERGENCY", "CLEARING", "S C"])
    func unknownRemoteModes(name: String) {
        #expect(TrackMode(remoteName: name) == nil)
    }

    @Test func globalModeWinsWhenItNamesAModeElseMode() {
        #expect(RemoteSnapshot(globalMode: "RED", mode: "GREEN").trackMode == .redFlag)
        #expect(RemoteSnapshot(globalMode: "", mode: "GREEN").trackMode == .normal)
        #expect(RemoteSnapshot(globalMode: nil, mode: "sc").trackMode == .safetyCar)
        #expect(RemoteSnapshot(globalMode: "bogus", mode: "RED").trackMode == .redFlag)
        #expect(RemoteSnapshot(globalMode: "PURPLE", mode: "EVACUATION").trackMode == .evacuation)
        // A misspelt evacuation still reads as one (containment of EVACU), and wins over mode.
        #expect(RemoteSnapshot(globalMode: "EVACUATON", mode: "GREEN").trackMode == .evacuation)
        #expect(RemoteSnapshot(globalMode: "bogus", mode: "worse").trackMode == nil)
        #expect(RemoteSnapshot().trackMode == nil)
    }

    @Test func remoteStateIsFreshUntilStaleAfter() {
        var engine = FusionEngine()
        engine.remoteFetched(RemoteSnapshot(mode: "YELLOW", message: "debris T3"), at: 0)
        #expect(engine.nextDeadline(after: 0) == 15 * second)
        let fresh = engine.evaluate(at: 15 * second - 1)
        #expect(fresh.decision == Decision(mode: .yellowFlag, source: .remote, zone: nil))
        #expect(fresh.remote?.isFresh == true)
        #expect(fresh.remote?.message == "debris T3")
        #expect(fresh.remote?.age == 15 * second - 1)
        let stale = engine.evaluate(at: 15 * second)
        #expect(stale.decision == .undecided)
        #expect(stale.remote?.isFresh == false)
        #expect(stale.remote?.reportedMode == .yellowFlag)
    }

    @Test func configuredStaleAfter() {
        var engine = FusionEngine(configuration: FusionConfiguration(staleAfter: 3 * second))
        engine.remoteFetched(RemoteSnapshot(mode: "RED"), at: second)
        #expect(engine.evaluate(at: 4 * second - 1).mode == .redFlag)
        #expect(engine.evaluate(at: 4 * second).mode == nil)
    }

    @Test func aFailedFetchRefreshesNothing() {
        var engine = FusionEngine()
        engine.remoteFetched(RemoteSnapshot(mode: "SC"), at: 0)
        engine.remoteFailed(at: 10 * second, reason: "connection refused")
        #expect(engine.nextDeadline(after: 10 * second) == 15 * second)
        let stale = engine.evaluate(at: 15 * second)
        #expect(stale.mode == nil)
        #expect(stale.remote?.lastFailureReason == "connection refused")
        #expect(stale.remote?.lastFailureAt == 10 * second)
        #expect(engine.counters.remoteFailures == 1)
    }

    @Test func anEmptyObjectIsUnknownAndNeverFresh() {
        var engine = FusionEngine()
        engine.remoteFetched(RemoteSnapshot(mode: "YELLOW"), at: 0)
        engine.remoteFetched(RemoteSnapshot(), at: second)
        let state = engine.evaluate(at: second)
        #expect(state.decision == .undecided)
        #expect(state.remote?.isFresh == false)
        #expect(engine.nextDeadline(after: second) == nil)
    }

    @Test func evacuationLatchesThroughFailuresEmptyObjectsAndStaleness() {
        var engine = FusionEngine()
        engine.remoteFetched(RemoteSnapshot(globalMode: "EVACUATION"), at: 0)
        #expect(engine.evaluate(at: 0).decision == Decision(mode: .evacuation, source: .remote, zone: nil))
        engine.remoteFailed(at: 5 * second, reason: "timeout")
        let stale = engine.evaluate(at: 20 * second)
        #expect(stale.mode == .evacuation)
        #expect(stale.remote?.isFresh == false)
        #expect(stale.remote?.isLatched == true)
        engine.remoteFetched(RemoteSnapshot(), at: 30 * second)
        #expect(engine.evaluate(at: 30 * second).mode == .evacuation)
        engine.remoteFetched(RemoteSnapshot(mode: "ALL_CLEAR"), at: 40 * second)
        #expect(engine.evaluate(at: 40 * second).mode == .evacuation)
        #expect(engine.evaluate(at: 3600 * second).mode == .evacuation)
        engine.remoteFetched(RemoteSnapshot(mode: "GREEN"), at: 3601 * second)
        let lifted = engine.evaluate(at: 3601 * second)
        #expect(lifted.decision == Decision(mode: .normal, source: .remote, zone: nil))
        #expect(lifted.remote?.isLatched == false)
        #expect(engine.evaluate(at: 3616 * second).mode == nil)
    }

    @Test func latchedEvacuationKeepsItsMessageUntilLifted() {
        var engine = FusionEngine()
        engine.remoteFetched(RemoteSnapshot(mode: "EVACUATION", message: "Leave by gate B"), at: 0)
        engine.remoteFetched(RemoteSnapshot(), at: 5 * second)
        engine.remoteFetched(RemoteSnapshot(mode: "bogus", message: "ignore me"), at: 10 * second)
        let latched = engine.evaluate(at: 60 * second)
        #expect(latched.remote?.isLatched == true)
        #expect(latched.remote?.message == "Leave by gate B")
        engine.remoteFetched(RemoteSnapshot(mode: "EVACUATION", message: "Leave by gate C"), at: 61 * second)
        #expect(engine.evaluate(at: 61 * second).remote?.message == "Leave by gate C")
        engine.remoteFetched(RemoteSnapshot(mode: "GREEN", message: "All clear"), at: 70 * second)
        let lifted = engine.evaluate(at: 70 * second)
        #expect(lifted.remote?.isLatched == false)
        #expect(lifted.remote?.message == "All clear")
    }

    @Test func restoredStateIsLastKnownNeverFresh() {
        var engine = FusionEngine()
        let now = 1_000 * second
        engine.restoreRemote(
            RemoteSnapshot(mode: "YELLOW", message: "Debris"), fetchedAt: now - 2 * second,
            latchedSnapshot: nil, at: now)
        let state = engine.evaluate(at: now)
        #expect(state.decision == .undecided)
        #expect(state.remote?.isRestored == true)
        #expect(state.remote?.isFresh == false)
        #expect(state.remote?.age == 2 * second)
        #expect(state.remote?.message == "Debris")
        #expect(engine.nextDeadline(after: now) == nil)
        engine.remoteFetched(RemoteSnapshot(mode: "YELLOW"), at: now + second)
        let fetched = engine.evaluate(at: now + second)
        #expect(fetched.remote?.isRestored == false)
        #expect(fetched.mode == .yellowFlag)
    }

    @Test func restoredLatchedEvacuationIsPublishedAtOnce() {
        var engine = FusionEngine()
        let evacuation = RemoteSnapshot(mode: "EVACUATION", message: "Leave by gate B")
        engine.restoreRemote(RemoteSnapshot(), fetchedAt: 0, latchedSnapshot: evacuation, at: 3_600 * second)
        let state = engine.evaluate(at: 3_600 * second)
        #expect(state.mode == .evacuation)
        #expect(state.source == .remote)
        #expect(state.remote?.message == "Leave by gate B")
        #expect(state.remote?.age == 3_600 * second)
    }

    @Test(arguments: ["NORMAL", "YELLOW", "VSC", "SC", "RED"])
    func anyKnownModeOtherThanEvacuationLiftsTheLatch(name: String) {
        var engine = FusionEngine()
        engine.remoteFetched(RemoteSnapshot(mode: "EVACUATION"), at: 0)
        engine.remoteFetched(RemoteSnapshot(mode: name), at: 100 * second)
        #expect(engine.evaluate(at: 100 * second).mode == TrackMode(remoteName: name))
        #expect(engine.evaluate(at: 115 * second).mode == nil)
    }

    @Test func theLatchOutranksABeaconInEveryPolicy() {
        for policy in Policy.allCases {
            var engine = FusionEngine(configuration: FusionConfiguration(policy: policy))
            engine.remoteFetched(RemoteSnapshot(mode: "EVACUATION"), at: 0)
            engine.circuit(.redFlag, ttl: 100, at: 50 * second)
            #expect(
                engine.evaluate(at: 50 * second).decision == Decision(mode: .evacuation, source: .remote, zone: nil))
        }
    }
}
