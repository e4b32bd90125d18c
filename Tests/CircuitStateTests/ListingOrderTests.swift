import BLEPayload
import CircuitState
import Testing

/// The orders a status reply lists in, as the cheap listings (`recent(limit:)`,
/// `activeOverrides(at:limit:)`) produce them: the same as the full sorts, ties included.
@Suite struct ListingOrderTests {
    /// Keys heard at one instant are listed in the order of their description: "source …" before
    /// "zone …", numbers compared as text ("zone 1" < "zone 10" < "zone 2"), then the address.
    @Test func beaconsHeardAtTheSameInstantAreListedInKeyDescriptionOrder() {
        var directory = BeaconDirectory()
        let heard: [(GeoRacingSignal, UInt64)] = [
            (.circuit(zone: 2, mode: .normal, sequence: 1), 1),
            (.circuit(zone: 10, mode: .normal, sequence: 1), 1),
            (.staff(sourceID: 7, zone: 1, mode: .redFlag, sequence: 1, ttl: 10), 1),
            (.circuit(zone: 1, mode: .normal, sequence: 1), 0xAB),
            (.circuit(zone: 65_535, mode: .normal, sequence: 1), 1),
            (.staff(sourceID: 4_294_967_295, zone: 1, mode: .redFlag, sequence: 1, ttl: 10), 1),
            (.circuit(zone: 1, mode: .normal, sequence: 1), 0x0C),
            (.circuit(zone: 100, mode: .normal, sequence: 1), 1),
            (.staff(sourceID: 0, zone: 1, mode: .redFlag, sequence: 1, ttl: 10), 2),
            (.circuit(zone: 0, mode: .normal, sequence: 1), 1),
        ]
        for (signal, number) in heard {
            directory.record(signal, address: address(number), rssi: -60, txPower: nil, outcome: .inserted, at: second)
        }
        // One newer beacon goes first whatever its key.
        directory.record(
            .circuit(zone: 9, mode: .normal, sequence: 1), address: address(9), rssi: -60, txPower: nil,
            outcome: .inserted, at: 2 * second)
        #expect(
            directory.recent.map(\.key.description) == [
                "zone 9 @ C0:00:00:00:00:09",
                "source 0 @ C0:00:00:00:00:02",
                "source 4294967295 @ C0:00:00:00:00:01",
                "source 7 @ C0:00:00:00:00:01",
                "zone 0 @ C0:00:00:00:00:01",
                "zone 1 @ C0:00:00:00:00:0C",
                "zone 1 @ C0:00:00:00:00:AB",
                "zone 10 @ C0:00:00:00:00:01",
                "zone 100 @ C0:00:00:00:00:01",
                "zone 2 @ C0:00:00:00:00:01",
                "zone 65535 @ C0:00:00:00:00:01",
            ])
        let cut = directory.recent(limit: 3)
        #expect(cut.total == 11)
        #expect(cut.listed.map(\.key) == directory.recent.prefix(3).map(\.key))
        #expect(directory.recent(limit: 0).listed.isEmpty)
    }

    /// Many keys, few instants: the listing equals a sort on (last seen, key description) Strings.
    @Test func recentEqualsTheSortOnKeyDescriptions() {
        var directory = BeaconDirectory(capacity: 1_000)
        for index in 0..<1_000 {
            let number = UInt64(index) &* 2_654_435_761 % 1_000_003
            let signal: GeoRacingSignal =
                switch index % 7 {
                case 0, 3:
                    .staff(
                        sourceID: UInt32(truncatingIfNeeded: number &* 4_099), zone: 1, mode: .redFlag, sequence: 1,
                        ttl: 10)
                case 5: GeoRacingSignal(command: .evacuate)
                default: .circuit(zone: UInt16(truncatingIfNeeded: number), mode: .normal, sequence: 1)
                }
            directory.record(
                signal, address: BluetoothAddress(rawValue: number &* 0x9E37_79B9), rssi: -70, txPower: nil,
                outcome: .inserted, at: Int64(index % 5) * second)
        }
        let bySort = directory.recent.sorted {
            $0.lastSeen != $1.lastSeen ? $0.lastSeen > $1.lastSeen : $0.key.description < $1.key.description
        }
        #expect(directory.recent.map(\.key) == bySort.map(\.key))
        for limit in [1, 17, 256, 999, 1_000, 5_000] {
            let cut = directory.recent(limit: limit)
            #expect(cut.listed.map(\.key) == bySort.prefix(limit).map(\.key))
            #expect(cut.total == directory.count)
        }
    }

    /// The cut listing of active overrides is the full sort's prefix, and counts every active one.
    @Test func bestActiveOverridesAreTheFullSortsPrefix() {
        var engine = FusionEngine()
        for index in 0..<600 {
            let mode: GeoRacingMode = [.normal, .safetyCar, .redFlag, .evacuation][index * 7 % 4]
            let rssi: Int8? = index % 11 == 0 ? nil : Int8(-40 - index % 37)
            if index % 5 == 0 {
                engine.staff(
                    source: UInt32(index % 13), zone: UInt16(index % 9), mode, ttl: 5 + UInt8(index % 20),
                    from: address(UInt64(index)), rssi: rssi, at: Int64(index))
            } else {
                engine.circuit(
                    zone: UInt16(index % 17), mode, ttl: 5 + UInt8(index % 20), from: address(UInt64(index)),
                    rssi: rssi, at: Int64(index))
            }
        }
        // Later, some have lapsed: only the active ones are ranked and counted.
        for time in [Int64(600), 12 * second] {
            let full = engine.activeOverrides(at: time)
            #expect(!full.isEmpty)
            for limit in [0, 1, 10, 256, full.count, full.count + 5] {
                let cut = engine.activeOverrides(at: time, limit: limit)
                #expect(cut.activeCount == full.count)
                #expect(cut.best == Array(full.prefix(limit)))
            }
        }
        #expect(engine.activeOverrides(at: 12 * second).count < engine.activeOverrides(at: 600).count)
    }
}
