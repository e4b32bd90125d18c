import BLEPayload
import CircuitState
import Testing

@Suite struct FilterTests {
    @Test func zoneFilterAdmitsOnlyConfiguredZones() {
        var engine = FusionEngine(configuration: FusionConfiguration(zones: [1, 2]))
        #expect(engine.circuit(zone: 3, .redFlag, at: 0) == .filtered(.zone))
        #expect(engine.staff(source: 9, zone: 3, .redFlag, at: 0) == .filtered(.zone))
        #expect(engine.circuit(zone: 2, .safetyCar, at: 0) == .inserted)
        #expect(engine.evaluate(at: 0).mode == .safetyCar)
        #expect(engine.counters.filteredZone == 2)
    }

    @Test func anEmptyZoneListAdmitsAllZones() {
        var engine = FusionEngine()
        #expect(engine.circuit(zone: 65535, .redFlag, at: 0) == .inserted)
    }

    @Test(arguments: [
        (rssi: Int8?.some(-90), admitted: true),
        (-91, false),
        (-127, false),
        (nil, true),
        (-20, true),
    ])
    func rssiFloor(rssi: Int8?, admitted: Bool) {
        var engine = FusionEngine()
        let outcome = engine.circuit(.redFlag, rssi: rssi, at: 0)
        #expect(outcome == (admitted ? .inserted : .filtered(.rssi)))
        #expect(engine.counters.filteredRSSI == (admitted ? 0 : 1))
    }

    @Test func configuredRSSIFloor() {
        var engine = FusionEngine(configuration: FusionConfiguration(minRSSI: -70))
        #expect(engine.circuit(.redFlag, rssi: -71, at: 0) == .filtered(.rssi))
        #expect(engine.circuit(.redFlag, rssi: -70, at: 0) == .inserted)
    }

    @Test func allowListMatchesAddressesOrStaffSourceIDs() {
        let allow = AllowList(addresses: [address(1)], sourceIDs: [7])
        var engine = FusionEngine(configuration: FusionConfiguration(allow: allow))
        #expect(engine.circuit(zone: 1, .redFlag, from: address(1), at: 0) == .inserted)
        #expect(engine.circuit(zone: 7, .redFlag, from: address(2), at: 0) == .filtered(.allow))
        #expect(engine.staff(source: 7, .redFlag, from: address(2), at: 0) == .inserted)
        #expect(engine.staff(source: 8, .redFlag, from: address(2), at: 0) == .filtered(.allow))
        #expect(engine.staff(source: 8, .redFlag, from: address(1), at: 0) == .inserted)
        #expect(engine.counters.filteredAllow == 2)
    }

    @Test func unknownModesAreNotOverrides() {
        var engine = FusionEngine()
        #expect(engine.circuit(.unknown(9), at: 0) == .filtered(.unknownMode))
        #expect(engine.overrideCount == 0)
        #expect(engine.counters.filteredUnknownMode == 1)
    }

    @Test func distanceGateIsOffByDefault() {
        var engine = FusionEngine()
        #expect(engine.circuit(.redFlag, rssi: -89, at: 0) == .inserted)
        let distance = engine.activeOverrides(at: 0).first?.distance ?? 0
        #expect(distance > 10)
    }

    @Test func distanceGateFiltersFarBeacons() {
        var engine = FusionEngine(configuration: FusionConfiguration(maxDistance: 5))
        #expect(engine.circuit(zone: 1, .redFlag, rssi: -89, at: 0) == .filtered(.distance))
        #expect(engine.circuit(zone: 2, .redFlag, rssi: -60, at: 0) == .inserted)
        #expect(engine.circuit(zone: 3, .redFlag, rssi: nil, at: 0) == .inserted)
        #expect(engine.counters.filteredDistance == 1)
    }

    @Test func distanceGateJudgesTheSmoothedEstimate() {
        var engine = FusionEngine(configuration: FusionConfiguration(maxDistance: 5))
        #expect(engine.circuit(.redFlag, sequence: 1, rssi: -60, at: 1) == .inserted)
        for sequence in UInt16(2)...6 {
            #expect(engine.circuit(.redFlag, sequence: sequence, rssi: -60, at: Int64(sequence)) == .replaced)
        }
        #expect(engine.circuit(.redFlag, sequence: 7, rssi: -89, at: 7) == .replaced)
        var fresh = FusionEngine(configuration: FusionConfiguration(maxDistance: 5))
        #expect(fresh.circuit(.redFlag, sequence: 7, rssi: -89, at: 7) == .filtered(.distance))
    }

    @Test func reconfigureDropsWhatTheNewConfigurationWouldFilter() {
        var engine = FusionEngine()
        engine.circuit(zone: 1, .redFlag, at: 0)
        engine.circuit(zone: 2, .safetyCar, at: 0)
        engine.reconfigure(FusionConfiguration(zones: [2]))
        #expect(engine.activeOverrides(at: 0).map(\.zone) == [2])
        #expect(engine.counters.droppedByReconfiguration == 1)
        #expect(engine.circuit(zone: 1, .redFlag, sequence: 2, at: 1) == .filtered(.zone))
    }

    @Test func reconfigureAppliesTheNewTTLCap() {
        var engine = FusionEngine()
        engine.circuit(.redFlag, ttl: 60, at: 0)
        engine.reconfigure(FusionConfiguration(maxTTL: 10 * second))
        #expect(engine.nextDeadline(after: 0) == 10 * second)
        #expect(engine.evaluate(at: 10 * second).decision == .undecided)
    }

    @Test func reconfigureShrinksTheTableKeepingTheMostSevere() {
        var engine = FusionEngine()
        engine.circuit(zone: 1, .normal, at: 0)
        engine.circuit(zone: 2, .redFlag, at: 1)
        engine.circuit(zone: 3, .safetyCar, at: 2)
        engine.reconfigure(FusionConfiguration(maxEntries: 2))
        #expect(Set(engine.activeOverrides(at: 2).map(\.zone)) == [2, 3])
        #expect(engine.counters.evicted == 1)
    }
}
