import BLEPayload
import CircuitState
import PropertyBased
import Testing

/// A frame another transmitter sends on the real beacon's key; `offset` in milliseconds from the
/// real beacon's first frame.
struct SpoofedFrame: Sendable {
    var offset: Int
    var sequenceChoice: Int
    var sequence: UInt16
    var mode: UInt8
    var ttl: UInt8
    var rssi: Int8?
    var zone: UInt16
}

private let spoofedFrames = zip(
    Gen.int(in: -2_000...40_000), Gen.int(in: 0...4), Gen.int(in: 0...65535), Gen.int(in: 0...4),
    Gen.int(in: 0...255), Gen.int(in: -95...(-20)).optional, Gen.int(in: 0...3)
).map { offset, choice, sequence, mode, ttl, rssi, zone in
    SpoofedFrame(
        offset: offset, sequenceChoice: choice, sequence: UInt16(sequence), mode: UInt8(mode),
        ttl: choice == 4 ? 0 : UInt8(ttl), rssi: rssi.map { Int8($0) }, zone: UInt16(zone))
}

@Suite struct ClaimPropertyTests {
    /// A transmitter that repeats a severe mode on its key more often than the hold, with a TTL
    /// longer than the hold plus its interval, is never lowered by anything else sent on that key.
    @Test func noOtherFrameLowersARepeatedSevereClaim() async {
        await propertyCheck(
            count: 300,
            input: Gen.int(in: 100...10_000), Gen.int(in: 1...3), Gen.int(in: 0...65535), Gen.bool,
            Gen.int(in: 1...9_999).array(of: 2...60), Gen.int(in: 0...60), Gen.bool,
            spoofedFrames.array(of: 0...60)
        ) { holdMs, severeMode, firstSequence, bumps, gaps, extraTTL, staff, spoofs in
            let hold = Int64(holdMs) * 1_000
            let maxGapMs = holdMs - 1
            let gapsMs = gaps.map { 1 + ($0 - 1) % maxGapMs }
            // The real TTL (whole seconds, at most 120) exceeds hold + its longest interval.
            let neededTTL = (holdMs + (gapsMs.max() ?? 0)) / 1_000 + 1
            let ttl = UInt8(min(120, neededTTL + extraTTL))
            let mode = GeoRacingMode(rawValue: UInt8(severeMode))
            let sender = address(3)
            func frame(sequence: UInt16, mode: GeoRacingMode, ttl: UInt8, zone: UInt16) -> GeoRacingSignal {
                staff
                    ? .staff(sourceID: 77, zone: zone, mode: mode, sequence: sequence, ttl: ttl)
                    : .circuit(zone: 3, mode: mode, sequence: sequence, ttl: ttl)
            }

            var inputs: [(time: Int64, input: ScenarioInput)] = []
            var time: Int64 = 1_000_000
            var sequence = UInt16(firstSequence)
            var realTimes: [Int64] = []
            for gap in [0] + gapsMs {
                time += Int64(gap) * 1_000
                if bumps && !realTimes.isEmpty { sequence &+= 1 }
                realTimes.append(time)
                inputs.append(
                    (
                        time,
                        .beacon(
                            frame(sequence: sequence, mode: mode, ttl: ttl, zone: 3), sender,
                            rssi: -60)
                    ))
            }
            let start = realTimes[0]
            let end = realTimes[realTimes.count - 1]
            for spoof in spoofs {
                let spoofSequence: UInt16 =
                    switch spoof.sequenceChoice {
                    case 0: UInt16(firstSequence) &+ 1
                    case 1: UInt16(firstSequence) &- 1
                    case 2: UInt16(firstSequence)
                    default: spoof.sequence
                    }
                let signal = frame(
                    sequence: spoofSequence, mode: GeoRacingMode(rawValue: spoof.mode), ttl: spoof.ttl,
                    zone: spoof.zone)
                inputs.append((start + Int64(spoof.offset) * 1_000 + 1, .beacon(signal, sender, rssi: spoof.rssi)))
            }

            var engine = FusionEngine(configuration: FusionConfiguration(deescalationHold: hold))
            let states = drive(&engine, inputs)
            let severity = TrackMode(mode)?.severity ?? 0
            for state in states where state.time >= start && state.time <= end {
                #expect(
                    (state.mode?.severity ?? -1) >= severity,
                    "at \(state.time - start) us: \(state.mode?.rawValue ?? "unknown") below \(mode)")
            }
        }
    }
}

/// GeoRacing's Android staff app sends v2 frames whose sequence is the low 16 bits of a millisecond
/// clock, sampled once per broadcast: across broadcasts the sequence jumps at random, forwards or
/// back. Whatever the jumps, a staff evacuation is published from its first frame for as long as
/// its broadcast lasts.
@Suite struct StaffSequenceTests {
    struct Broadcast: Sendable {
        var sequence: UInt16
        var mode: GeoRacingMode
        var frames: Int
        var pauseMs: Int
    }

    static let broadcasts = zip(Gen.int(in: 0...65535), Gen.int(in: 0...3), Gen.int(in: 1...40), Gen.int(in: 0...5_000))
        .map { sequence, mode, frames, pause in
            Broadcast(
                sequence: UInt16(sequence), mode: GeoRacingMode(rawValue: UInt8(mode)), frames: frames,
                pauseMs: pause)
        }

    @Test func noSequenceHidesAStaffEvacuation() async {
        await propertyCheck(count: 300, input: Self.broadcasts.array(of: 1...12), Gen.int(in: 20...500)) {
            broadcasts, intervalMs in
            var engine = FusionEngine()
            var time: Int64 = second
            for broadcast in broadcasts {
                for frame in 0..<broadcast.frames {
                    let signal = GeoRacingSignal.staff(
                        sourceID: 0x1201_5432, zone: 3, mode: broadcast.mode, sequence: broadcast.sequence, ttl: 60,
                        flags: 1)
                    engine.ingest(signal, address: address(7), rssi: -60, at: time)
                    if broadcast.mode == .evacuation {
                        #expect(engine.evaluate(at: time).mode == .evacuation, "frame \(frame) of \(broadcast)")
                        let beforeNext = time + Int64(intervalMs) * 1_000 - 1
                        #expect(engine.evaluate(at: beforeNext).mode == .evacuation)
                    }
                    time += Int64(intervalMs) * 1_000
                }
                time += Int64(broadcast.pauseMs) * 1_000
            }
        }
    }
}
