import BLEPayload
import CircuitState
import Testing

@testable import BeacondCore

/// What the transmitter advertises (docs/beacon.md): race control's fresh mode or a hand-set
/// mode, as GeoRacing's Windows beacon frames it; never stale data.
@Suite struct BeaconFramePlannerTests {
    static func fresh(_ mode: TrackMode, _ celsius: Double? = nil) -> BeaconInput {
        .raceControl(mode: mode, fresh: true, temperature: celsius, problem: nil)
    }

    @Test func theFrameIsTheWindowsBeaconsV1Frame() {
        var planner = BeaconFramePlanner(zone: 7, restored: nil)
        let (plan, changed) = planner.plan(Self.fresh(.redFlag, 11.3))
        #expect(changed)
        #expect(plan == .advertise(.circuit(zone: 7, mode: .redFlag, sequence: 0, ttl: 10, temperature: 11)))
        guard case .advertise(let signal) = plan else { return }
        #expect(signal.encoded() == [0x01, 0x00, 0x07, 0x02, 0x00, 0x00, 0x00, 0x0A, 0x0B])
    }

    @Test(arguments: [
        (TrackMode.normal, GeoRacingMode.normal), (.yellowFlag, .safetyCar), (.vsc, .safetyCar),
        (.safetyCar, .safetyCar), (.redFlag, .redFlag), (.evacuation, .evacuation),
    ])
    func everyModeHasItsV1Byte(mode: TrackMode, byte: GeoRacingMode) {
        #expect(BeaconFramePlanner.modeByte(mode) == byte)
    }

    @Test(arguments: [
        (11.3, UInt8(11)), (11.5, 12), (-0.4, 0), (-12, 0), (254.6, 255), (400, 255), (0, 0),
    ])
    func temperaturesRoundToWholeDegreesClampedAsTheWindowsBeaconDoes(celsius: Double, byte: UInt8) {
        #expect(BeaconFramePlanner.temperatureByte(celsius) == byte)
    }

    @Test func noTemperatureSendsTheEightByteFrame() {
        var planner = BeaconFramePlanner(zone: 1, restored: nil)
        guard case .advertise(let signal) = planner.plan(Self.fresh(.normal)).plan else {
            Issue.record("a fresh mode advertises")
            return
        }
        #expect(signal.encoded().count == 8)
        #expect(BeaconFramePlanner.temperatureByte(.nan) == nil)
        #expect(BeaconFramePlanner.temperatureByte(.infinity) == nil)
    }

    /// The sequence moves on every change of mode or whole degree, never on a repeat.
    @Test func theSequenceCountsChangesOnly() {
        var planner = BeaconFramePlanner(zone: 1, restored: nil)
        var sequences: [UInt16] = []
        for input in [
            Self.fresh(.normal, 20.2), Self.fresh(.normal, 20.4), Self.fresh(.normal, 21),
            Self.fresh(.vsc, 21), Self.fresh(.safetyCar, 21), Self.fresh(.redFlag, 21), .handSet(.redFlag),
        ] {
            if case .advertise(let signal) = planner.plan(input).plan { sequences.append(signal.sequence) }
        }
        // 20.2 and 20.4 are both 20. VSC and safety car share v1's byte 1 but not v3's, which the
        // transmitter may sign: each is a change. A hand-set red has no temperature.
        #expect(sequences == [0, 0, 1, 2, 3, 4, 5])
    }

    @Test func aRestoredSequenceContinuesAndTheSameFrameKeepsIt() {
        let record = BeaconSequenceFile.Record(sequence: 65_535, mode: 2, temperature: nil)
        var same = BeaconFramePlanner(zone: 1, restored: record)
        #expect(
            same.plan(.handSet(.redFlag)) == (.advertise(.circuit(zone: 1, mode: .redFlag, sequence: 65_535)), false))
        var other = BeaconFramePlanner(zone: 1, restored: record)
        #expect(other.plan(.handSet(.evacuation)).plan == .advertise(.circuit(zone: 1, mode: .evacuation, sequence: 0)))
    }

    /// Stale, unreachable or modeless race control, and no input at all, advertise nothing.
    @Test func staleOrMissingRaceControlIsSilentAndSaysWhy() {
        var planner = BeaconFramePlanner(zone: 1, restored: nil)
        _ = planner.plan(Self.fresh(.redFlag))
        let stale = planner.plan(.raceControl(mode: .redFlag, fresh: false, temperature: 9, problem: "timeout"))
        #expect(stale.plan == .silent(reason: "race control's state is stale or unreachable: timeout"))
        #expect(!stale.changed)
        #expect(
            planner.plan(.raceControl(mode: nil, fresh: true, temperature: nil, problem: nil)).plan
                == .silent(reason: "race control reports no mode"))
        #expect(
            planner.plan(.none(reason: "no race control and no hand-set mode")).plan
                == .silent(reason: "no race control and no hand-set mode"))
        // Back to fresh with the same content: the same sequence.
        #expect(planner.plan(Self.fresh(.redFlag)).plan == .advertise(.circuit(zone: 1, mode: .redFlag, sequence: 0)))
    }

    @Test func theSequenceFileRoundTripsAndRefusesAnythingElse() {
        let records = [
            BeaconSequenceFile.Record(sequence: 0, mode: 0, temperature: nil),
            BeaconSequenceFile.Record(sequence: 65_535, mode: 3, temperature: 255),
            BeaconSequenceFile.Record(sequence: 9, mode: 5, temperature: nil, signedAt: 1_795_852_800),
        ]
        for record in records {
            #expect(BeaconSequenceFile.decode(BeaconSequenceFile.encode(record)) == record)
        }
        #expect(String(decoding: BeaconSequenceFile.encode(records[1]), as: UTF8.self) == "65535 3 255\n")
        #expect(String(decoding: BeaconSequenceFile.encode(records[2]), as: UTF8.self) == "9 5 - 1795852800\n")
        for bad in [
            "", "1 2", "1 2 3 x", "1 2 3 4 5", "65536 0 -", "1 6 -", "1 0 256", "x 0 -", "1 0 -1", "1 0 - -1",
            "\u{FF}",
        ] {
            #expect(BeaconSequenceFile.decode(Array(bad.utf8)) == nil, "\(bad)")
        }
        #expect(BeaconSequenceFile.decode([0xFF, 0xFE]) == nil)
        #expect(BeaconSequenceFile.decode([UInt8](repeating: 0x31, count: 65)) == nil)
    }
}
