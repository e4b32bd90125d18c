import BLEPayload
import BeacondTestSupport
import Foundation
import Testing

/// Issue 14, fault injection: the air. Each spoofing mitigation of docs/security.md, checked by
/// replaying a forger's frames beside a real beacon's through `beacond run --backend replay`.
/// Where it costs one more run, the same capture without the mitigation shows the forgery
/// succeeding, so each check can fail.
@Suite(.serialized) struct FaultAirMitigationTests {
    typealias Frame = FaultCaptures.Frame
    static let real = FaultAirTests.real
    static let forger = FaultAirTests.forger

    static func replay(_ frames: [Frame], config: String? = nil, flags: [String] = [], name: String) throws
        -> FaultAirTests.Outcome
    {
        try FaultAirTests.replay(frames, config: config, flags: flags, name: name)
    }

    static func repeated(
        _ address: UInt64, zone: UInt16, mode: GeoRacingMode, sequence: UInt16, ttl: UInt8 = 10, rssi: Int8 = -60,
        from: Int64 = 0, every: Int64 = 250_000, count: Int
    ) -> [Frame] {
        FaultAirTests.repeated(
            address, zone: zone, mode: mode, sequence: sequence, ttl: ttl, rssi: rssi, from: from, every: every,
            count: count)
    }

    /// A real red flag in zone 1 and a forged evacuation in zone 9, both for 10 s.
    static var zoneAttack: [Frame] {
        FaultAirTests.merged(
            Self.repeated(Self.real, zone: 1, mode: .redFlag, sequence: 10, count: 40),
            Self.repeated(Self.forger, zone: 9, mode: .evacuation, sequence: 10, count: 40))
    }

    @Test func theZoneFilterIgnoresForgedFramesInOtherZones() throws {
        let open = try Self.replay(Self.zoneAttack, name: "no zone filter")
        #expect(open.mode == "evacuation" && open.zone == 9)
        let filtered = try Self.replay(Self.zoneAttack, flags: ["--zones", "1,2"], name: "zone filter")
        #expect(filtered.mode == "red_flag" && filtered.zone == 1)
        #expect(filtered.counter("filtered_zone") == 40)
    }

    @Test func theRSSIFloorIgnoresWeakForgedFrames() throws {
        let frames = FaultAirTests.merged(
            Self.repeated(Self.real, zone: 1, mode: .safetyCar, sequence: 10, count: 40),
            Self.repeated(Self.forger, zone: 2, mode: .evacuation, sequence: 10, rssi: -95, count: 40))
        let outcome = try Self.replay(frames, name: "rssi floor")
        #expect(outcome.mode == "safety_car" && outcome.zone == 1)
        #expect(outcome.counter("filtered_rssi") == 40)
        let lowered = try Self.replay(frames, flags: ["--min-rssi", "-100"], name: "rssi floor -100")
        #expect(lowered.mode == "evacuation")
    }

    @Test func theAllowListIgnoresOtherAddresses() throws {
        let frames = FaultAirTests.merged(
            Self.repeated(Self.real, zone: 3, mode: .redFlag, sequence: 10, count: 40),
            Self.repeated(Self.forger, zone: 3, mode: .evacuation, sequence: 10, count: 40))
        let outcome = try Self.replay(frames, config: "fusion:\n  allow: [C0:FF:EE:00:00:03]\n", name: "allow list")
        #expect(outcome.mode == "red_flag")
        #expect(outcome.beacon?["addr"] as? String == "C0:FF:EE:00:00:03")
        #expect(outcome.counter("filtered_allow") == 40)
    }

    /// A forger claiming −127 dBm TX power (once estimated at 0 m) at −80 dBm RSSI: past the 10 m gate.
    @Test func theDistanceGateIgnoresAFarForgerWhateverTXPowerItClaims() throws {
        var forged = Self.repeated(Self.forger, zone: 2, mode: .evacuation, sequence: 10, rssi: -80, count: 40)
        for index in forged.indices { forged[index].txPower = -127 }
        let real = Self.repeated(Self.real, zone: 1, mode: .redFlag, sequence: 10, rssi: -50, count: 40)
        let frames = FaultAirTests.merged(real, forged)
        let outcome = try Self.replay(frames, config: "fusion:\n  max_distance_m: 10\n", name: "distance gate")
        #expect(outcome.mode == "red_flag" && outcome.zone == 1)
        #expect(outcome.counter("filtered_distance") == 40)
    }

    /// One forged red flag with TTL 255 s; a real beacon's normal frames every second after it. With
    /// the default cap (120 s) it is in force at 119 s and gone at 121 s.
    @Test(arguments: [(119, "red_flag"), (121, "normal")])
    func theTTLCapEndsAForgedFrameAfter120Seconds(seconds: Int, expected: String) throws {
        let forged = Frame(
            micros: 0, address: Self.forger, signal: .circuit(zone: 5, mode: .redFlag, sequence: 1, ttl: 255))
        let real = Self.repeated(
            Self.real, zone: 1, mode: .normal, sequence: 10, from: 1_000_000, every: 1_000_000, count: seconds)
        let frames = [forged] + real
        let outcome = try Self.replay(frames, name: "ttl cap \(seconds)")
        #expect(outcome.mode == expected, "\(outcome.state)")
    }

    /// A forged frame with the highest sequence, from another address in the same zone, cannot make
    /// the real beacon's later frames look older: its own lowering (sequence 501) is taken.
    @Test func aHugeSequenceFromAnotherAddressDoesNotAgeTheRealBeacon() throws {
        let frames = FaultAirTests.merged(
            Self.repeated(Self.real, zone: 3, mode: .redFlag, sequence: 500, count: 40),
            [
                Frame(
                    micros: 1_000_000, address: Self.forger,
                    signal: .circuit(zone: 3, mode: .normal, sequence: 65535, ttl: 255))
            ],
            Self.repeated(Self.real, zone: 3, mode: .normal, sequence: 501, from: 10_000_000, count: 40))
        let outcome = try Self.replay(frames, name: "keys per address")
        #expect(outcome.mode == "normal")
        #expect(outcome.counter("older_ignored") == 0)
    }

    /// The attack docs/security.md describes: the real beacon sends evacuation (sequence 500) four
    /// times a second; the forger, on the same address, sends normal with sequence 501 and TTL 255 at
    /// −88 dBm every 2 s, for 3 minutes. The evacuation stays, contested, with a spoofing warning at
    /// most once a minute.
    @Test func aForgerOnTheRealKeyCannotHideTheEvacuation() throws {
        let frames = FaultAirTests.merged(
            Self.repeated(Self.real, zone: 3, mode: .evacuation, sequence: 500, count: 720),
            Self.repeated(
                Self.real, zone: 3, mode: .normal, sequence: 501, ttl: 255, rssi: -88, from: 100_000, every: 2_000_000,
                count: 90))
        let outcome = try Self.replay(frames, name: "claims per key")
        #expect(outcome.mode == "evacuation" && outcome.zone == 3)
        #expect(outcome.beacon?["contested"] as? Bool == true)
        #expect(outcome.counter("contests") >= 1)
        let warnings = outcome.lines("possible spoofing")
        #expect((1...3).contains(warnings), "\(warnings) spoofing warnings")
    }

    /// 10,000 forged `normal` frames from random addresses into a table of 256: the real red flag is
    /// never evicted.
    @Test func aFloodOfNormalFramesCannotEvictARealRedFlag() throws {
        var random = SplitMix64(seed: 256)
        let flood = (0..<10_000).map { index in
            Frame(
                micros: 2_000_000 + Int64(index) * 1_000,
                address: UInt64.random(in: 1...0xFFFF_FFFF_FFFF, using: &random),
                signal: .circuit(zone: UInt16(index % 50), mode: .normal, sequence: 1, ttl: 255))
        }
        let real = Self.repeated(Self.real, zone: 3, mode: .redFlag, sequence: 10, count: 60)
        let frames = FaultAirTests.merged(real, flood)
        let outcome = try Self.replay(frames, config: "fusion:\n  max_entries: 256\n", name: "bounded table")
        #expect(outcome.mode == "red_flag" && outcome.zone == 3)
        #expect(outcome.counter("evicted") > 0 || outcome.counter("refused") > 0)
        #expect(outcome.counter("overrides") <= 256)
    }
}
