import BLEPayload
import CircuitState
import PropertyBased
import Testing

/// The recorder skips a beacon's steady repeats (`.refreshed`). A frame that repeats its sequence
/// with another mode, zone or an earlier expiry is not steady (`.revised`) and shows at once.
@Suite struct RaceRecorderRepeatTests {
    @Test func theSameSequenceWithAnotherModeShowsWhenHeard() throws {
        var inputs: [(Int64, ScenarioInput)] = (0..<3).map {
            (Int64($0) * second, beacon(zone: 1, .redFlag, sequence: 10))
        }
        inputs.append((3 * second, beacon(zone: 1, .evacuation, sequence: 10)))
        let zone = record(inputs).stretches.filter { $0.row == .zone(1) }
        #expect(zone.map(\.mode) == [.redFlag, .evacuation])
        #expect(zone.map(\.start) == [0, 3 * second])
        #expect(zone.map(\.end) == [3 * second, 13 * second])
        #expect(zone.compactMap { claim($0)?.end } == [.replaced, .expired])
    }

    @Test func aRepeatThatShortensTheClaimEndsItsStretchAtTheNewExpiry() {
        let zone = record([
            (0, beacon(zone: 2, .yellowFlag, sequence: 3, ttl: 30)),
            (5 * second, beacon(zone: 2, .yellowFlag, sequence: 3, ttl: 2)),
        ]).stretches.filter { $0.row == .zone(2) }
        #expect(zone.map(\.mode) == [.yellowFlag])
        #expect(zone.map(\.end) == [7 * second])
        #expect(zone.compactMap { claim($0)?.end } == [.expired])
    }

    @Test func aStaffDeviceRepeatingItsSequenceInAnotherZoneMovesRows() {
        let staff = { (zone: UInt16) in
            ScenarioInput.beacon(
                .staff(sourceID: 9, zone: zone, mode: .yellowFlag, sequence: 1, ttl: 10), address(7), rssi: -50)
        }
        let stretches = record([(0, staff(1)), (2 * second, staff(1)), (4 * second, staff(2))]).stretches
        #expect(stretches.filter { $0.row == .zone(1) }.map(\.end) == [4 * second])
        #expect(stretches.filter { $0.row == .zone(2) }.map(\.start) == [4 * second])
    }

    /// The shortcut is exact: for scenarios dense in repeated sequences (other modes, TTLs, zones
    /// and senders on them), the stretches equal those of a recorder that reads every report.
    @Test func skippingSteadyRepeatsRecordsWhatReadingEveryReportDoes() async {
        let reports = zip(
            Gen.int(in: 0...5), Gen.int(in: 0...2), Gen.int(in: 0...2), Gen.int(in: 0...12), Gen.int(in: 0...30_000),
            Gen.bool, Gen.int(in: 0...2)
        ).map { mode, zone, sender, ttl, tick, staff, sequence -> (Int64, ScenarioInput) in
            let mode = GeoRacingMode(rawValue: UInt8(mode))
            let signal: GeoRacingSignal =
                staff
                ? .staff(sourceID: 1, zone: UInt16(zone), mode: mode, sequence: UInt16(sequence), ttl: UInt8(ttl))
                : .circuit(zone: UInt16(zone), mode: mode, sequence: UInt16(sequence), ttl: UInt8(ttl))
            return (Int64(tick) * 1_000, .beacon(signal, address(UInt64(sender)), rssi: -60))
        }
        await propertyCheck(count: 300, input: reports.array(of: 1...60)) { generated in
            let inputs = generated.sorted { $0.0 < $1.0 }
            let skipping = record(inputs)
            let reading = record(inputs, readingEveryReport: true)
            #expect(skipping.stretches == reading.stretches)
            #expect(skipping.changes == reading.changes)
        }
    }

    @Test func theEngineCallsOnlyASteadyRepeatRefreshed() {
        var engine = FusionEngine()
        engine.circuit(.yellowFlag, sequence: 4, ttl: 10, at: 0)
        #expect(engine.circuit(.yellowFlag, sequence: 4, ttl: 10, at: second) == .refreshed)
        #expect(engine.circuit(.yellowFlag, sequence: 4, ttl: 20, at: 2 * second) == .refreshed)
        // Expiring at 8 s, before the 22 s in force: revised.
        #expect(engine.circuit(.yellowFlag, sequence: 4, ttl: 5, at: 3 * second) == .revised)
        #expect(engine.circuit(.redFlag, sequence: 4, ttl: 5, at: 4 * second) == .revised)
        #expect(engine.counters.repeats == 4)
        let staff = { (zone: UInt16) in GeoRacingSignal.staff(sourceID: 2, zone: zone, mode: .vsc, sequence: 1, ttl: 10)
        }
        engine.ingest(staff(1), address: address(5), rssi: -50, at: 5 * second)
        #expect(engine.ingest(staff(1), address: address(5), rssi: -50, at: 6 * second) == .refreshed)
        #expect(engine.ingest(staff(2), address: address(5), rssi: -50, at: 7 * second) == .revised)
    }
}
