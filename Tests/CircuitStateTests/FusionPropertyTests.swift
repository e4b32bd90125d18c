import BLEPayload
import CircuitState
import PropertyBased
import Testing

/// A generated beacon report; `tick` is a time in milliseconds.
struct GeneratedReport: Sendable {
    var mode: GeoRacingMode
    var zone: UInt16
    var sender: UInt64
    var rssi: Int8?
    var ttl: UInt8
    var tick: Int
    var staff: Bool
    var sequence: UInt16

    var signal: GeoRacingSignal {
        staff
            ? .staff(sourceID: UInt32(zone) + 100, zone: zone, mode: mode, sequence: sequence, ttl: ttl)
            : .circuit(zone: zone, mode: mode, sequence: sequence, ttl: ttl)
    }

    var time: Int64 { Int64(tick) * 1_000 }
    var input: ScenarioInput { .beacon(signal, address(sender), rssi: rssi) }
}

private let remoteNames = ["GREEN", "YELLOW", "VSC", "SC", "RED", "EVACUATION", "bogus", ""]

/// A generated venue API event; `tick` is a time in milliseconds.
struct GeneratedRemote: Sendable {
    var outcome: Int
    var tick: Int

    var time: Int64 { Int64(tick) * 1_000 }
    var input: ScenarioInput {
        outcome < remoteNames.count ? .fetched(RemoteSnapshot(mode: remoteNames[outcome])) : .failed
    }
}

private let reports = zip(
    Gen.int(in: 0...4), Gen.int(in: 0...3), Gen.int(in: 0...5), Gen.int(in: -90...(-30)).optional,
    Gen.int(in: 0...30), Gen.int(in: 0...40_000), Gen.bool, Gen.int(in: 0...65535)
).map { mode, zone, sender, rssi, ttl, tick, staff, sequence in
    GeneratedReport(
        mode: GeoRacingMode(rawValue: UInt8(mode)), zone: UInt16(zone), sender: UInt64(sender),
        rssi: rssi.map { Int8($0) }, ttl: UInt8(ttl), tick: tick, staff: staff, sequence: UInt16(sequence))
}

private let remotes = zip(Gen.int(in: 0...(remoteNames.count)), Gen.int(in: 0...40_000))
    .map { outcome, tick in GeneratedRemote(outcome: outcome, tick: tick) }

@Suite struct FusionPropertyTests {
    @Test func underSafetyAFreshRemoteEvacuationIsAlwaysPublished() async {
        await propertyCheck(
            count: 200, input: reports.array(of: 0...25), Gen.int(in: 0...40_000), Gen.int(in: 0...14_999)
        ) { beacons, fetchTick, delay in
            var engine = FusionEngine()
            let fetchTime = Int64(fetchTick) * 1_000
            let evaluationTime = fetchTime + Int64(delay) * 1_000
            var inputs = beacons.filter { $0.time <= evaluationTime }.map { ($0.time, $0.input) }
            inputs.append((fetchTime, .fetched(RemoteSnapshot(globalMode: "evacuation"))))
            for (time, input) in inputs.sorted(by: { $0.0 < $1.0 }) { input.apply(to: &engine, at: time) }
            let state = engine.evaluate(at: evaluationTime)
            #expect(state.mode == .evacuation)
            #expect(state.source == .remote || state.override?.mode == .evacuation)
        }
    }

    @Test func theOutputChangesOnlyAtInputOrDeadlineTimes() async {
        await propertyCheck(
            count: 150, input: reports.array(of: 0...20), remotes.array(of: 0...6),
            Gen.int(in: 0...120_000).array(of: 1...40)
        ) { beacons, fetches, probeTicks in
            let inputs = beacons.map { ($0.time, $0.input) } + fetches.map { ($0.time, $0.input) }
            var reference = FusionEngine()
            let timeline = drive(&reference, inputs)

            var probed = FusionEngine()
            var probeInputs = inputs.map { (time: $0.0, input: Optional($0.1)) }
            // Every event lies on a whole millisecond; probes lie strictly between.
            probeInputs += probeTicks.map { (time: Int64($0) * 1_000 + 500, input: nil) }
            probeInputs.sort { $0.time < $1.time }
            var probedTimeline: [PublishedState] = []
            var index = 0
            while index < probeInputs.count {
                let time = probeInputs[index].time
                probedTimeline += probed.evaluateDeadlines(before: time)
                var isProbe = false
                while index < probeInputs.count, probeInputs[index].time == time {
                    if let input = probeInputs[index].input {
                        input.apply(to: &probed, at: time)
                    } else {
                        isProbe = true
                    }
                    index += 1
                }
                let state = probed.evaluate(at: time)
                if isProbe {
                    let expected = timeline.last { $0.time <= time }?.decision ?? .undecided
                    #expect(state.decision == expected)
                    #expect(!state.changed || timeline.allSatisfy { $0.time > time })
                } else {
                    probedTimeline.append(state)
                }
            }
            probedTimeline += probed.evaluateDeadlines(before: .max)
            #expect(probedTimeline.map(\.time) == timeline.map(\.time))
            #expect(probedTimeline.map(\.decision) == timeline.map(\.decision))
            #expect(probed.nextDeadline(after: probed.clock) == nil)
        }
    }

    @Test func theOrderOfInputsSharingATimestampDoesNotMatter() async {
        await propertyCheck(
            count: 200, input: reports.array(of: 1...30), Gen.int(in: 0...1_000_000).array(of: 30), Gen.int(in: 0...2)
        ) { generated, sortKeys, policyIndex in
            // Distinct keys, few distinct instants and strengths, so ties are common.
            let beacons = generated.enumerated().map { index, report in
                var report = report
                report.sender = UInt64(index)
                report.tick = report.tick % 3 * 1_000
                report.rssi = report.rssi.map { $0 / 20 * 20 }
                return report
            }
            let configuration = FusionConfiguration(policy: Policy.allCases[policyIndex])
            let inputs = beacons.map { ($0.time, $0.input) }
            let permuted = zip(inputs, sortKeys).sorted { $0.1 < $1.1 }.map(\.0)
            var original = FusionEngine(configuration: configuration)
            var shuffled = FusionEngine(configuration: configuration)
            let first = drive(&original, inputs)
            let second = drive(&shuffled, permuted)
            #expect(first.map(\.decision) == second.map(\.decision))
            #expect(first.map(\.override?.key) == second.map(\.override?.key))
            #expect(first.map(\.time) == second.map(\.time))
        }
    }

    @Test func floodsKeepTheTableBoundedAndTheRealRedFlag() async {
        await propertyCheck(
            count: 100, input: Gen.int(in: 1...8),
            zip(Gen.int(in: 0...2), Gen.int(in: -90...(-30)), Gen.int(in: 0...1))
                .array(of: 0...200)
        ) { maxEntries, flood in
            var engine = FusionEngine(configuration: FusionConfiguration(maxEntries: maxEntries))
            engine.circuit(zone: 1, .redFlag, ttl: 120, from: address(0), rssi: -90, at: 0)
            let modes: [GeoRacingMode] = [.normal, .safetyCar, .redFlag]
            for (index, (mode, rssi, staff)) in flood.enumerated() {
                let spoof = BluetoothAddress(rawValue: 0x5000_0000_0000 + UInt64(index))
                if staff == 1 {
                    engine.staff(
                        source: UInt32(index), .init(rawValue: UInt8(mode)), ttl: 120, from: spoof,
                        rssi: Int8(rssi), at: Int64(index))
                } else {
                    engine.circuit(zone: 1, modes[mode], ttl: 120, from: spoof, rssi: Int8(rssi), at: Int64(index))
                }
                #expect(engine.overrideCount <= maxEntries)
            }
            #expect(engine.activeKeys(at: Int64(flood.count)).contains(.circuit(zone: 1, address: address(0))))
        }
    }
}
