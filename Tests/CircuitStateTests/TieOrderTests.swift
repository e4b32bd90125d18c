import BLEPayload
import CircuitState
import Testing

@Suite struct TieOrderTests {
    /// Inserts both signals in both orders and returns the winner's key each time.
    private func winners(
        _ first: (GeoRacingSignal, BluetoothAddress, Int8?), _ second: (GeoRacingSignal, BluetoothAddress, Int8?)
    ) -> [OverrideKey?] {
        [[first, second], [second, first]].map { pair in
            var engine = FusionEngine()
            for (signal, sender, rssi) in pair { engine.ingest(signal, address: sender, rssi: rssi, at: 0) }
            return engine.evaluate(at: 0).override?.key
        }
    }

    @Test func higherSeverityWinsOverStrongerSignal() {
        let result = winners(
            (.circuit(zone: 1, mode: .redFlag, sequence: 1), address(1), -85),
            (.circuit(zone: 1, mode: .safetyCar, sequence: 1), address(2), -30))
        #expect(result == [.circuit(zone: 1, address: address(1)), .circuit(zone: 1, address: address(1))])
    }

    @Test func strongerLatestRSSIWins() {
        let result = winners(
            (.circuit(zone: 1, mode: .redFlag, sequence: 1), address(1), -70),
            (.circuit(zone: 9, mode: .redFlag, sequence: 1), address(2), -50))
        #expect(result == [.circuit(zone: 9, address: address(2)), .circuit(zone: 9, address: address(2))])
    }

    @Test func aMissingRSSIIsTheWeakest() {
        let result = winners(
            (.circuit(zone: 1, mode: .redFlag, sequence: 1), address(1), nil),
            (.circuit(zone: 9, mode: .redFlag, sequence: 1), address(2), -90))
        #expect(result == [.circuit(zone: 9, address: address(2)), .circuit(zone: 9, address: address(2))])
    }

    @Test func thenTheLowerZone() {
        let result = winners(
            (.circuit(zone: 2, mode: .redFlag, sequence: 1), address(1), -60),
            (.circuit(zone: 1, mode: .redFlag, sequence: 1), address(2), -60))
        #expect(result == [.circuit(zone: 1, address: address(2)), .circuit(zone: 1, address: address(2))])
    }

    @Test func thenCircuitBeaconsBeforeStaff() {
        let result = winners(
            (.staff(sourceID: 0, zone: 1, mode: .redFlag, sequence: 1, ttl: 10), address(1), -60),
            (.circuit(zone: 1, mode: .redFlag, sequence: 1), address(2), -60))
        #expect(result == [.circuit(zone: 1, address: address(2)), .circuit(zone: 1, address: address(2))])
    }

    @Test func thenTheLowerSourceID() {
        let result = winners(
            (.staff(sourceID: 9, zone: 1, mode: .redFlag, sequence: 1, ttl: 10), address(1), -60),
            (.staff(sourceID: 5, zone: 1, mode: .redFlag, sequence: 1, ttl: 10), address(2), -60))
        #expect(result == [.staff(sourceID: 5, address: address(2)), .staff(sourceID: 5, address: address(2))])
    }

    @Test func thenTheLowerAddress() {
        let result = winners(
            (.circuit(zone: 1, mode: .redFlag, sequence: 1), address(2), -60),
            (.circuit(zone: 1, mode: .redFlag, sequence: 1), address(1), -60))
        #expect(result == [.circuit(zone: 1, address: address(1)), .circuit(zone: 1, address: address(1))])
    }

    @Test func distanceNeverBreaksTies() {
        var engine = FusionEngine()
        for sequence in UInt16(1)...7 {
            engine.circuit(zone: 1, .redFlag, sequence: sequence, from: address(1), rssi: -40, at: 0)
        }
        engine.circuit(zone: 1, .redFlag, sequence: 8, from: address(1), rssi: -80, at: 0)
        engine.circuit(zone: 1, .redFlag, sequence: 1, from: address(2), rssi: -70, at: 0)
        let overrides = engine.activeOverrides(at: 0)
        let near = overrides.first { $0.address == address(1) }?.distance ?? .infinity
        let far = overrides.first { $0.address == address(2) }?.distance ?? 0
        #expect(near < far)
        #expect(engine.evaluate(at: 0).override?.address == address(2))
    }

    @Test func activeOverridesListsBestFirst() {
        var engine = FusionEngine()
        engine.circuit(zone: 3, .normal, from: address(1), rssi: -40, at: 0)
        engine.circuit(zone: 2, .redFlag, from: address(2), rssi: -80, at: 0)
        engine.circuit(zone: 1, .redFlag, from: address(3), rssi: -80, at: 0)
        engine.circuit(zone: 4, .safetyCar, from: address(4), rssi: -40, at: 0)
        #expect(engine.activeOverrides(at: 0).map(\.zone) == [1, 2, 4, 3])
    }

    @Test func thePublishedBeaconStaysWhileItIsAmongTheMostSevere() {
        var engine = FusionEngine()
        engine.circuit(zone: 5, .redFlag, ttl: 10, from: address(1), rssi: -70, at: 0)
        #expect(engine.evaluate(at: 0).zone == 5)
        engine.circuit(zone: 2, .redFlag, ttl: 30, from: address(2), rssi: -50, at: second)
        let sticky = engine.evaluate(at: second)
        #expect(sticky.zone == 5)
        #expect(!sticky.changed)
        let handedOver = engine.evaluate(at: 10 * second)
        #expect(handedOver.zone == 2)
        #expect(handedOver.changed)

        var fresh = FusionEngine()
        fresh.circuit(zone: 5, .redFlag, ttl: 10, from: address(1), rssi: -70, at: 0)
        fresh.circuit(zone: 2, .redFlag, ttl: 30, from: address(2), rssi: -50, at: second)
        #expect(fresh.evaluate(at: second).zone == 2)
    }

    @Test func stickinessFollowsOnlyTheLastPublishedState() {
        var engine = FusionEngine()
        engine.circuit(zone: 5, .redFlag, ttl: 60, from: address(1), rssi: -70, at: 0)
        engine.circuit(zone: 2, .redFlag, ttl: 60, from: address(2), rssi: -50, at: 0)
        #expect(engine.evaluate(at: 0).zone == 2)
        engine.circuit(zone: 5, .redFlag, sequence: 2, ttl: 60, from: address(1), rssi: -40, at: second)
        #expect(engine.evaluate(at: second).zone == 2)
        engine.circuit(zone: 7, .evacuation, ttl: 60, from: address(3), at: 2 * second)
        #expect(engine.evaluate(at: 2 * second).zone == 7)
        engine.circuit(zone: 7, .evacuation, sequence: 2, ttl: 0, from: address(3), at: 3 * second)
        #expect(engine.evaluate(at: 3 * second).zone == 7)
        #expect(engine.evaluate(at: 3 * second + FusionConfiguration.defaultDeescalationHold).zone == 5)
    }

    @Test func aRemotePublicationBreaksStickiness() {
        var engine = FusionEngine()
        engine.circuit(zone: 5, .safetyCar, ttl: 60, from: address(1), rssi: -70, at: 0)
        #expect(engine.evaluate(at: 0).zone == 5)
        engine.remoteFetched(RemoteSnapshot(mode: "YELLOW"), at: second)
        engine.circuit(zone: 2, .safetyCar, ttl: 60, from: address(2), rssi: -50, at: second)
        #expect(engine.evaluate(at: second).source == .remote)
        #expect(engine.evaluate(at: 16 * second).decision == Decision(mode: .safetyCar, source: .beacon, zone: 2))
    }
}
