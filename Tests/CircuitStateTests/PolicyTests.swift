import BLEPayload
import CircuitState
import Testing

@Suite struct PolicyTests {
    @Test(arguments: [
        (beacon: TrackMode?.some(.redFlag), remote: TrackMode?.none, expected: StateSource.beacon),
        (.redFlag, .yellowFlag, .beacon),
        (.redFlag, .normal, .beacon),
        (.redFlag, .redFlag, .beacon),
        (.redFlag, .evacuation, .remote),
        (.evacuation, .evacuation, .beacon),
        (.evacuation, .redFlag, .beacon),
        (.safetyCar, .normal, .remote),
        (.safetyCar, nil, .beacon),
        (.normal, .yellowFlag, .remote),
        (nil, .normal, .remote),
        (.normal, .evacuation, .remote),
        (nil, nil, .none),
    ])
    func safety(beacon: TrackMode?, remote: TrackMode?, expected: StateSource) {
        #expect(Policy.safety.source(beacon: beacon, remote: remote) == expected)
    }

    @Test(arguments: [
        (beacon: TrackMode?.some(.normal), remote: TrackMode?.some(.redFlag), expected: StateSource.beacon),
        (.safetyCar, nil, .beacon),
        (nil, .redFlag, .remote),
        (nil, nil, .none),
        (.redFlag, .evacuation, .remote),
        (.evacuation, .evacuation, .beacon),
    ])
    func beaconFirst(beacon: TrackMode?, remote: TrackMode?, expected: StateSource) {
        #expect(Policy.beaconFirst.source(beacon: beacon, remote: remote) == expected)
    }

    @Test(arguments: [
        (beacon: TrackMode?.some(.safetyCar), remote: TrackMode?.some(.redFlag), expected: StateSource.remote),
        (.redFlag, .safetyCar, .beacon),
        (.redFlag, .redFlag, .beacon),
        (.normal, .normal, .beacon),
        (nil, .normal, .remote),
        (.normal, nil, .beacon),
        (.normal, .evacuation, .remote),
        (.evacuation, .evacuation, .beacon),
        (nil, nil, .none),
    ])
    func mostSevere(beacon: TrackMode?, remote: TrackMode?, expected: StateSource) {
        #expect(Policy.mostSevere.source(beacon: beacon, remote: remote) == expected)
    }

    @Test func policiesNeverPickAnAbsentSideAndRemoteEvacuationAlwaysWins() {
        let modes: [TrackMode?] = [nil] + TrackMode.allCases
        for policy in Policy.allCases {
            for beacon in modes {
                for remote in modes {
                    let source = policy.source(beacon: beacon, remote: remote)
                    switch source {
                    case .beacon: #expect(beacon != nil)
                    case .remote: #expect(remote != nil)
                    case .none: #expect(beacon == nil && remote == nil)
                    }
                    if remote == .evacuation && beacon != .evacuation { #expect(source == .remote) }
                }
            }
        }
    }

    @Test func policyNamesAreTheConfigurationSpellings() {
        #expect(Policy.allCases.map(\.rawValue) == ["safety", "beacon-first", "most-severe"])
        #expect(FusionConfiguration().policy == .safety)
    }

    @Test func safetyPublishesTheRemoteStateOverALesserBeaconUntilItGoesStale() {
        var engine = FusionEngine()
        engine.circuit(zone: 5, .safetyCar, ttl: 60, at: 0)
        engine.remoteFetched(RemoteSnapshot(mode: "GREEN"), at: 0)
        let remote = engine.evaluate(at: 0)
        #expect(remote.decision == Decision(mode: .normal, source: .remote, zone: nil))
        #expect(remote.override?.mode == .safetyCar)
        #expect(engine.evaluate(at: 15 * second).decision == Decision(mode: .safetyCar, source: .beacon, zone: 5))
    }

    @Test func safetyPublishesABeaconRedFlagOverALesserRemoteState() {
        var engine = FusionEngine()
        engine.remoteFetched(RemoteSnapshot(mode: "SC"), at: 0)
        engine.circuit(zone: 9, .redFlag, at: 0)
        #expect(engine.evaluate(at: 0).decision == Decision(mode: .redFlag, source: .beacon, zone: 9))
    }

    @Test func beaconFirstAndMostSevereThroughTheEngine() {
        var first = FusionEngine(configuration: FusionConfiguration(policy: .beaconFirst))
        first.remoteFetched(RemoteSnapshot(mode: "RED"), at: 0)
        first.circuit(zone: 2, .normal, at: 0)
        #expect(first.evaluate(at: 0).decision == Decision(mode: .normal, source: .beacon, zone: 2))

        var severe = FusionEngine(configuration: FusionConfiguration(policy: .mostSevere))
        severe.remoteFetched(RemoteSnapshot(mode: "RED"), at: 0)
        severe.circuit(zone: 2, .safetyCar, at: 0)
        #expect(severe.evaluate(at: 0).decision == Decision(mode: .redFlag, source: .remote, zone: nil))
        severe.circuit(zone: 3, .redFlag, at: 0)
        #expect(severe.evaluate(at: 0).decision == Decision(mode: .redFlag, source: .beacon, zone: 3))
    }

    @Test func reconfigureSwitchesPolicy() {
        var engine = FusionEngine()
        engine.remoteFetched(RemoteSnapshot(mode: "GREEN"), at: 0)
        engine.circuit(zone: 2, .safetyCar, at: 0)
        #expect(engine.evaluate(at: 0).source == .remote)
        engine.reconfigure(FusionConfiguration(policy: .beaconFirst))
        let state = engine.evaluate(at: 1)
        #expect(state.source == .beacon)
        #expect(state.changed)
    }
}
