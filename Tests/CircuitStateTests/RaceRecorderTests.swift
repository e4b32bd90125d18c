import BLEPayload
import CircuitState
import Testing

/// Runs timed inputs through a `TimelineDriver` with a `RaceRecorder` following it, as `beacond report`
/// does, and returns its stretches (finished at the last evaluation) and every published change.
/// `readingEveryReport`: the reference the recorder's shortcut must equal, a recorder that reads
/// the key of every report, steady repeats too.
func record(
    _ inputs: [(time: Int64, input: ScenarioInput)], configuration: FusionConfiguration = FusionConfiguration(),
    limit: Int = 1_000, readingEveryReport: Bool = false
) -> (stretches: [RaceStretch], changes: [PublishedState], recorder: RaceRecorder) {
    var driver = TimelineDriver(engine: FusionEngine(configuration: configuration))
    var recorder = RaceRecorder(limit: limit)
    var changes: [PublishedState] = []
    let observe: TimelineDriver.Observer = { state, engine in
        if state.changed { changes.append(state) }
        recorder.observe(state, engine: engine)
    }
    for (time, input) in inputs {
        var outcome: IngestOutcome?
        driver.input(at: time, observe: observe) { outcome = input.apply(to: &$0, at: time) }
        if case .beacon(let signal, let sender, _) = input, let outcome {
            let key = OverrideKey(signal: signal, address: sender)
            recorder.ingested(key, outcome: readingEveryReport ? .replaced : outcome)
        }
    }
    driver.finish(observe: observe)
    recorder.finish(at: recorder.lastTime ?? 0)
    return (recorder.stretches, changes, recorder)
}

func beacon(
    zone: UInt16, _ mode: GeoRacingMode, sequence: UInt16, ttl: UInt8 = 10, from sender: UInt64 = 1, rssi: Int8 = -60
) -> ScenarioInput {
    .beacon(.circuit(zone: zone, mode: mode, sequence: sequence, ttl: ttl), address(sender), rssi: rssi)
}

func claim(_ stretch: RaceStretch) -> ClaimDetail? {
    if case .claim(let detail) = stretch.detail { return detail }
    return nil
}

@Suite struct RaceRecorderTests {
    @Test func aZonesClaimsEndExpiredReplacedOrAfterTheHold() throws {
        // Zone 1: normal, raised to red (replaced), lowered to normal (held 1 s), then silence (expired).
        var inputs: [(Int64, ScenarioInput)] = []
        for tick in 0..<10 { inputs.append((Int64(tick) * second, beacon(zone: 1, .normal, sequence: 1))) }
        for tick in 10..<20 { inputs.append((Int64(tick) * second, beacon(zone: 1, .redFlag, sequence: 2))) }
        for tick in 20..<25 { inputs.append((Int64(tick) * second, beacon(zone: 1, .normal, sequence: 3))) }
        let zone = record(inputs).stretches.filter { $0.row == .zone(1) }
        #expect(zone.map(\.mode) == [.normal, .redFlag, .normal])
        #expect(zone.map(\.start) == [0, 10 * second, 21 * second])
        #expect(zone.map(\.end) == [10 * second, 21 * second, 34 * second])
        #expect(zone.compactMap { claim($0)?.end } == [.replaced, .deescalated, .expired])
        let red = try #require(claim(zone[1]))
        #expect(red.heldFrom == 20 * second)
        #expect(red.sequence == 2 && red.ttl == 10 && red.rssi == -60)
        #expect(claim(zone[0])?.heldFrom == nil)
    }

    @Test func aClearedClaimEndsAfterTheHoldAsCleared() {
        let stretches = record([
            (0, beacon(zone: 2, .safetyCar, sequence: 5)),
            (3 * second, beacon(zone: 2, .normal, sequence: 6, ttl: 0)),
        ]).stretches.filter { $0.row == .zone(2) }
        #expect(stretches.map(\.mode) == [.safetyCar])
        #expect(stretches.map(\.end) == [4 * second])
        #expect(stretches.compactMap { claim($0)?.end } == [.cleared])
        #expect(stretches.compactMap { claim($0)?.heldFrom } == [3 * second])
    }

    @Test func aMoreSevereBeaconInTheZoneOutranksAndTheFirstClaimResumes() {
        let stretches = record([
            (0, beacon(zone: 3, .yellowFlag, sequence: 1, ttl: 30, from: 1)),
            (5 * second, beacon(zone: 3, .redFlag, sequence: 1, ttl: 5, from: 2)),
        ]).stretches.filter { $0.row == .zone(3) }
        #expect(stretches.map(\.mode) == [.yellowFlag, .redFlag, .yellowFlag])
        #expect(stretches.map(\.start) == [0, 5 * second, 10 * second])
        #expect(stretches.compactMap { claim($0)?.end } == [.outranked, .expired, .expired])
        #expect(stretches.compactMap { claim($0)?.key.address } == [address(1), address(2), address(1)])
    }

    @Test func beaconsRepeatingOneFlagMakeOneStretchAndAreCounted() {
        var inputs: [(Int64, ScenarioInput)] = []
        for tick in 0..<20 {
            // Two beacons in zone 4 with the same flag; the louder changes with each report.
            let first = tick.isMultiple(of: 2)
            inputs.append(
                (
                    Int64(tick) * second / 2,
                    beacon(
                        zone: 4, .redFlag, sequence: 7, from: first ? 1 : 2,
                        rssi: first ? -50 : -40)
                ))
        }
        let stretches = record(inputs).stretches.filter { $0.row == .zone(4) }
        #expect(stretches.count == 1)
        #expect(stretches.first.flatMap(claim)?.beacons == 2)
        #expect(stretches.first?.end == 19 * second / 2 + 10 * second)
    }

    @Test func anOlderSequenceThatAssertsMoreIsMarkedContested() throws {
        let stretches = record([
            (0, beacon(zone: 5, .normal, sequence: 10)),
            // A copy of the beacon's address replays an older red flag: a contest.
            (2 * second, beacon(zone: 5, .redFlag, sequence: 9)),
        ]).stretches.filter { $0.row == .zone(5) }
        // The normal claim lapses at 10 s under the contested red flag, which lasts until 12 s.
        #expect(stretches.map(\.mode) == [.normal, .redFlag])
        #expect(stretches.map(\.end) == [2 * second, 12 * second])
        let red = try #require(claim(stretches[1]))
        #expect(red.contested && red.sequence == 9 && red.end == .expired)
        #expect(claim(stretches[0])?.contested == false)
    }

    @Test func aStaffDeviceMovingZonesLeavesTheOldRow() {
        let stretches = record([
            (0, .beacon(.staff(sourceID: 9, zone: 1, mode: .yellowFlag, sequence: 1, ttl: 10), address(7), rssi: -50)),
            (
                4 * second,
                .beacon(
                    .staff(sourceID: 9, zone: 2, mode: .redFlag, sequence: 2, ttl: 10), address(7),
                    rssi: -50)
            ),
        ]).stretches
        let zone1 = stretches.filter { $0.row == .zone(1) }
        let zone2 = stretches.filter { $0.row == .zone(2) }
        #expect(zone1.map(\.mode) == [.yellowFlag] && zone1.map(\.end) == [4 * second])
        #expect(zone1.compactMap { claim($0)?.end } == [.replaced])
        #expect(zone2.map(\.mode) == [.redFlag] && zone2.map(\.start) == [4 * second])
    }

    @Test func thePublishedRowIsOneStretchPerChange() {
        let (stretches, changes, _) = record([
            (0, beacon(zone: 1, .normal, sequence: 1, ttl: 5)),
            (2 * second, beacon(zone: 2, .safetyCar, sequence: 1, ttl: 5, from: 2)),
            (20 * second, .fetched(RemoteSnapshot(globalMode: "RED"))),
        ])
        let published = stretches.filter { $0.row == .published }
        #expect(published.map(\.start) == changes.map(\.time))
        #expect(published.map(\.mode) == changes.map(\.mode))
        #expect(Array(published.map(\.end).dropLast()) == Array(changes.map(\.time).dropFirst()))
    }

    @Test func raceControlStretchesSplitOnFreshnessAndCountFailures() throws {
        var configuration = FusionConfiguration()
        configuration.staleAfter = 15 * second
        let stretches = record(
            [
                (0, .fetched(RemoteSnapshot(globalMode: "RED"))),
                (5 * second, .failed),
                (10 * second, .failed),
                (40 * second, .fetched(RemoteSnapshot(globalMode: "RED"))),
            ], configuration: configuration
        ).stretches.filter { $0.row == .raceControl }
        #expect(stretches.map(\.mode) == [.redFlag, .redFlag, .redFlag, .redFlag])
        #expect(stretches.map(\.start) == [0, 15 * second, 40 * second, 55 * second])
        let details: [RaceControlDetail] = stretches.compactMap {
            if case .raceControl(let detail) = $0.detail { return detail }
            return nil
        }
        #expect(details.map(\.fresh) == [true, false, true, false])
        #expect(details.first?.failures == 2)
        #expect(details.first?.lastFailure == "timeout")
    }

    @Test func theBoundsDropTheOldestEndedStretchesAndCountThem() {
        var inputs: [(Int64, ScenarioInput)] = []
        for index in 0..<50 {
            let mode: GeoRacingMode = index.isMultiple(of: 2) ? .redFlag : .yellowFlag
            inputs.append((Int64(index) * 20 * second, beacon(zone: 1, mode, sequence: UInt16(index + 1), ttl: 5)))
        }
        let (stretches, _, recorder) = record(inputs, limit: 10)
        #expect(stretches.count == 10)
        #expect(recorder.dropped > 0)
        #expect(stretches.count + recorder.dropped >= 100)
        // The newest are kept: the last red flag's zone stretch is there.
        #expect(stretches.contains { $0.row == .zone(1) && $0.start == 49 * 20 * second })
    }
}

@Suite struct RaceRecorderPageTests {
    @Test func pagesWalkTheEndedStretchesInOrderThenTheOpenOnes() {
        var inputs: [(Int64, ScenarioInput)] = []
        for index in 0..<6 {
            inputs.append((Int64(index) * 20 * second, beacon(zone: 1, .redFlag, sequence: UInt16(index + 1), ttl: 5)))
        }
        var (_, _, recorder) = record(inputs)
        var seen: [RaceStretch] = []
        var cursor = 0
        var pages = 0
        while true {
            let page = recorder.page(since: .min, after: cursor, limit: 4)
            seen += page.stretches
            cursor = page.next
            pages += 1
            if !page.more { break }
        }
        // `record` finished the recorder: every stretch has ended, four a page.
        #expect(pages == (recorder.count + 3) / 4)
        #expect(Set(seen) == Set(recorder.stretches) && seen.count == recorder.count)
        #expect(cursor == recorder.count)
        // `since` leaves out what ended before it, but the cursor still moves past it.
        let recent = recorder.page(since: 100 * second, after: 0, limit: 1_000)
        #expect(recent.stretches.allSatisfy { $0.end >= 100 * second })
        #expect(!recent.more && recent.next == cursor)
        #expect(recent.stretches.count < recorder.count)
        recorder.finish(at: 200 * second)
        #expect(recorder.page(since: .min, after: 0, limit: 1_000).stretches.count == recorder.count)
    }

    @Test func aCursorIntoWhatWasDroppedSaysHowMuch() {
        var inputs: [(Int64, ScenarioInput)] = []
        for index in 0..<20 {
            let mode: GeoRacingMode = index.isMultiple(of: 2) ? .redFlag : .safetyCar
            inputs.append((Int64(index) * 20 * second, beacon(zone: 1, mode, sequence: UInt16(index + 1), ttl: 5)))
        }
        let (_, _, recorder) = record(inputs, limit: 10)
        let page = recorder.page(since: .min, after: 0, limit: 1_000)
        #expect(page.skipped == recorder.dropped && page.skipped > 0)
        #expect(page.stretches.count == recorder.count)
    }
}

@Suite struct RaceRecorderEvictionTests {
    /// A full table evicts a claim for a more severe one: the zone's stretch ends there, `evicted`,
    /// read from the engine's eviction log (not by reading every key again).
    @Test func anEvictedClaimEndsItsZonesStretchAtOnce() throws {
        var configuration = FusionConfiguration()
        configuration.maxEntries = 4
        var inputs: [(Int64, ScenarioInput)] = []
        for zone in UInt16(1)...4 {
            inputs.append((Int64(zone) * second, beacon(zone: zone, .normal, sequence: 1, ttl: 60, from: UInt64(zone))))
        }
        inputs.append((10 * second, beacon(zone: 9, .redFlag, sequence: 1, ttl: 5, from: 9)))
        let stretches = record(inputs, configuration: configuration).stretches
        let evicted = stretches.filter { claim($0)?.end == .evicted }
        #expect(evicted.count == 1)
        #expect(evicted.first?.end == 10 * second)
        #expect(stretches.contains { $0.row == .zone(9) && $0.mode == .redFlag && $0.end == 15 * second })
    }

    /// A flood of distinct keys through a small table: every stretch still ends by a reason the
    /// engine gives, and the zones that kept their claims end by expiry.
    @Test func aFloodThroughASmallTableKeepsEveryStretchExplained() {
        var configuration = FusionConfiguration()
        configuration.maxEntries = 16
        var inputs: [(Int64, ScenarioInput)] = []
        for index in 0..<5_000 {
            let zone = UInt16(index % 50)
            inputs.append(
                (Int64(index) * 1_000, beacon(zone: zone, .safetyCar, sequence: 1, ttl: 3, from: UInt64(index))))
        }
        let stretches = record(inputs, configuration: configuration, limit: 100_000).stretches
        let ends = Set(stretches.compactMap { claim($0)?.end })
        #expect(ends.isSubset(of: [.evicted, .expired]))
        #expect(stretches.filter { $0.row != .published && $0.row != .raceControl }.allSatisfy { $0.end > $0.start })
    }
}
