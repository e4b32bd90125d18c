import BLEPayload
import CircuitState
import Testing

@Suite struct BeaconDirectoryTests {
    @Test func recordsEveryBeaconWithItsLatestOutcome() {
        var directory = BeaconDirectory()
        let red = GeoRacingSignal.circuit(zone: 3, mode: .redFlag, sequence: 7)
        directory.record(red, address: address(1), rssi: -60, txPower: nil, outcome: .inserted, at: 1 * second)
        directory.record(red, address: address(1), rssi: -62, txPower: -4, outcome: .refreshed, at: 2 * second)
        directory.record(
            .circuit(zone: 9, mode: .normal, sequence: 1), address: address(2), rssi: -95, txPower: nil,
            outcome: .filtered(.rssi), at: 3 * second)
        #expect(directory.count == 2)
        let recent = directory.recent
        #expect(recent.map(\.key) == [.circuit(zone: 9, address: address(2)), .circuit(zone: 3, address: address(1))])
        #expect(recent.map(\.rejection) == ["rssi", nil])
        let first = directory.entry(for: .circuit(zone: 3, address: address(1)))
        #expect(first?.frames == 2)
        #expect(first?.rssi == -62)
        #expect(first?.txPower == -4)
        #expect(first?.window.values == [-60, -62])
        #expect(first?.lastSeen == 2 * second)
    }

    @Test func forgetsTheLeastRecentlyHeardPastItsCapacity() {
        var directory = BeaconDirectory(capacity: 3)
        for index in 0..<5 {
            directory.record(
                .circuit(zone: 1, mode: .normal, sequence: 1), address: address(UInt64(index)), rssi: -50,
                txPower: nil, outcome: .inserted, at: Int64(index) * second)
        }
        #expect(directory.count == 3)
        #expect(directory.forgotten == 2)
        #expect(directory.recent.map(\.address) == [address(4), address(3), address(2)])
    }

    @Test func olderAndRefusedFramesAreNamed() {
        var directory = BeaconDirectory()
        directory.record(
            .circuit(zone: 1, mode: .normal, sequence: 1), address: address(1), rssi: nil, txPower: nil,
            outcome: .ignoredOlder, at: 0)
        directory.record(
            .staff(sourceID: 5, zone: 1, mode: .redFlag, sequence: 1, ttl: 10), address: address(1),
            rssi: nil, txPower: nil, outcome: .refused, at: 0)
        #expect(Set(directory.recent.compactMap(\.rejection)) == ["older", "table_full"])
    }

    @Test func clearOverridesForgetsTheTableButNotTheRemoteState() {
        var engine = FusionEngine()
        engine.circuit(.redFlag, sequence: 500, at: 0)
        engine.remoteFetched(RemoteSnapshot(mode: "YELLOW"), at: 0)
        engine.clearOverrides()
        #expect(engine.overrideCount == 0)
        // A restarted sequence is accepted at once.
        #expect(engine.circuit(.normal, sequence: 1, at: 1) == .inserted)
        #expect(engine.evaluate(at: 1).remote?.reportedMode == .yellowFlag)
    }
}
