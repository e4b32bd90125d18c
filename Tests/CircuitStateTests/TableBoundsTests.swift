import BLEPayload
import CircuitState
import Testing

@Suite struct TableBoundsTests {
    @Test func theDefaultBoundIs4096() {
        #expect(FusionConfiguration().maxEntries == 4096)
        // The default engine holds exactly that many: 4096 red flags go in, the next is refused.
        var engine = FusionEngine()
        var inserted = 0
        for index in 0..<4096 {
            let sender = BluetoothAddress(rawValue: 0x6000_0000_0000 + UInt64(index))
            if engine.circuit(zone: 1, .redFlag, from: sender, at: 0) == .inserted { inserted += 1 }
        }
        #expect(inserted == 4096)
        #expect(engine.overrideCount == 4096)
        #expect(
            engine.circuit(zone: 1, .redFlag, from: BluetoothAddress(rawValue: 0x7000_0000_0000), at: 0) == .refused)
        #expect(engine.overrideCount == 4096)
    }

    @Test func aFloodOfSpoofedKeysNeitherGrowsTheTableNorEvictsARedFlag() {
        var engine = FusionEngine()
        let real = OverrideKey.circuit(zone: 12, address: address(0))
        engine.circuit(zone: 12, .redFlag, ttl: 120, from: address(0), at: 0)
        let modes: [GeoRacingMode] = [.normal, .safetyCar, .redFlag]
        var largest = 0
        for index in 1...100_000 {
            let spoof = BluetoothAddress(rawValue: 0x5000_0000_0000 + UInt64(index))
            engine.circuit(
                zone: UInt16(truncatingIfNeeded: index), modes[index % 3], sequence: UInt16(truncatingIfNeeded: index),
                ttl: 120, from: spoof, rssi: -30, at: Int64(index))
            largest = max(largest, engine.overrideCount)
        }
        #expect(largest == 4096)
        #expect(engine.activeKeys(at: 100_000).contains(real))
        #expect(engine.evaluate(at: 100_000).mode == .redFlag)
        #expect(engine.counters.evicted > 0)
        #expect(engine.counters.refused > 0)
        #expect(engine.counters.accepted + engine.counters.refused == 100_001)
        #expect(engine.counters.accepted - engine.counters.evicted == engine.overrideCount)
    }

    @Test func aFullTableOfTheTopSeverityRefusesNewKeys() {
        var engine = FusionEngine(configuration: FusionConfiguration(maxEntries: 3))
        for zone in UInt16(1)...3 { engine.circuit(zone: zone, .redFlag, at: 0) }
        #expect(engine.circuit(zone: 4, .redFlag, at: 1) == .refused)
        #expect(engine.circuit(zone: 5, .normal, at: 1) == .refused)
        #expect(engine.counters.refused == 2)
        #expect(engine.circuit(zone: 1, .redFlag, sequence: 2, at: 2) == .replaced)
        #expect(engine.overrideCount == 3)
    }

    @Test func expiredEntriesGoFirst() {
        var engine = FusionEngine(configuration: FusionConfiguration(maxEntries: 2))
        engine.circuit(zone: 1, .normal, ttl: 5, at: 0)
        engine.circuit(zone: 2, .normal, ttl: 60, at: 0)
        #expect(engine.circuit(zone: 3, .normal, at: 5 * second) == .inserted)
        #expect(engine.counters.evicted == 0)
        #expect(engine.counters.expired == 1)
        #expect(Set(engine.activeOverrides(at: 5 * second).map(\.zone)) == [2, 3])
    }

    @Test func theLeastSevereLeastRecentlyAcceptedEntryIsEvicted() {
        var engine = FusionEngine(configuration: FusionConfiguration(maxEntries: 3))
        engine.circuit(zone: 1, .safetyCar, at: 0)
        engine.circuit(zone: 2, .normal, at: 1)
        engine.circuit(zone: 3, .normal, at: 2)
        engine.circuit(zone: 2, .normal, at: 3)
        #expect(engine.circuit(zone: 4, .redFlag, at: 4) == .inserted)
        #expect(Set(engine.activeOverrides(at: 4).map(\.zone)) == [1, 2, 4])
        #expect(engine.circuit(zone: 5, .safetyCar, at: 5) == .inserted)
        #expect(Set(engine.activeOverrides(at: 5).map(\.zone)) == [1, 4, 5])
        #expect(engine.circuit(zone: 6, .safetyCar, at: 6) == .inserted)
        #expect(Set(engine.activeOverrides(at: 6).map(\.zone)) == [4, 5, 6])
        #expect(engine.counters.evicted == 3)
    }

    /// An engine whose table of two is full: zone 1 in `first` (at 0), zone 2 in `second` (at 1).
    static func fullTableOfTwo(_ first: GeoRacingMode, _ second: GeoRacingMode) -> FusionEngine {
        var engine = FusionEngine(configuration: FusionConfiguration(maxEntries: 2))
        engine.circuit(zone: 1, first, at: 0)
        engine.circuit(zone: 2, second, at: 1)
        return engine
    }

    @Test func aNewcomerMoreSevereThanTheTopMayEvictTheTop() {
        var engine = Self.fullTableOfTwo(.redFlag, .redFlag)
        #expect(engine.circuit(zone: 3, .evacuation, at: 2) == .inserted)
        #expect(Set(engine.activeOverrides(at: 2).map(\.zone)) == [2, 3])
        #expect(engine.evaluate(at: 2).mode == .evacuation)
    }

    @Test func aLessSevereNewcomerNeverEvictsAMoreSevereEntry() {
        var engine = Self.fullTableOfTwo(.safetyCar, .redFlag)
        #expect(engine.circuit(zone: 3, .normal, at: 2) == .refused)
        #expect(Set(engine.activeOverrides(at: 2).map(\.zone)) == [1, 2])
    }
}
