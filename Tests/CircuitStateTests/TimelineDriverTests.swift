import BLEPayload
import CircuitState
import Testing

@Suite struct TimelineDriverTests {
    @Test func inputsSharingATimestampAreEvaluatedTogether() {
        var engine = FusionEngine()
        // A safety car and the evacuation that follows it arrive at the same instant: nothing is
        // published in between.
        let states = drive(
            &engine,
            [
                (10 * second, .beacon(.circuit(zone: 1, mode: .normal, sequence: 1), address(1), rssi: -50)),
                (20 * second, .beacon(.circuit(zone: 2, mode: .safetyCar, sequence: 1), address(2), rssi: -50)),
                (20 * second, .beacon(.circuit(zone: 2, mode: .evacuation, sequence: 2), address(2), rssi: -50)),
            ])
        let changes = states.filter(\.changed)
        #expect(changes.map(\.time) == [10 * second, 20 * second, 30 * second])
        #expect(changes.map(\.mode) == [.normal, .evacuation, nil])
        #expect(states.allSatisfy { $0.mode != .safetyCar })
    }

    @Test func expiriesBetweenInputsAndAfterTheLastAreEvaluatedAtTheirInstants() {
        var engine = FusionEngine()
        let states = drive(
            &engine,
            [
                (0, .beacon(.circuit(zone: 1, mode: .redFlag, sequence: 1, ttl: 5), address(1), rssi: -50)),
                (1 * second, .beacon(.circuit(zone: 2, mode: .normal, sequence: 1, ttl: 10), address(2), rssi: -50)),
                (
                    30 * second,
                    .beacon(.circuit(zone: 3, mode: .safetyCar, sequence: 1, ttl: 10), address(3), rssi: -50)
                ),
            ])
        let changes = states.filter(\.changed).map { ($0.time, $0.mode, $0.zone) }
        #expect(changes.map(\.0) == [0, 5 * second, 11 * second, 30 * second, 40 * second])
        #expect(changes.map(\.1) == [.redFlag, .normal, nil, .safetyCar, nil])
        #expect(changes.map(\.2) == [1, 2, nil, 3, nil])
        #expect(engine.nextDeadline(after: 40 * second) == nil)
    }

    @Test func remoteStalenessIsAnEventAfterTheLastInput() {
        var engine = FusionEngine(configuration: FusionConfiguration(staleAfter: 15 * second))
        let states = drive(&engine, [(100 * second, .fetched(RemoteSnapshot(globalMode: "RED")))])
        let changes = states.filter(\.changed)
        #expect(changes.map(\.time) == [100 * second, 115 * second])
        #expect(changes.map(\.mode) == [.redFlag, nil])
        #expect(changes.map(\.source) == [.remote, StateSource.none])
    }
}
