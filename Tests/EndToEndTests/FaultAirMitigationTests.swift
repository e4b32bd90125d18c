import BLEPayload
import BeacondTestSupport
import Foundation
import Testing

/// Issue 14, fault injection: the air. Each spoofing mitigation of docs/security.md, checked by
/// replaying a forger's frames beside a real beacon's through `beacond run --backend replay
/// --speed max`. The same capture without the mitigation shows the forgery succeeding, so each
/// check can fail.
@Suite(.serialized) struct FaultAirMitigationTests {
    typealias Frame = FaultCaptures.Frame
    static let real = FaultCaptures.real
    static let forger = FaultCaptures.forger

    static func repeated(
        _ address: UInt64, zone: UInt16, mode: GeoRacingMode, sequence: UInt16, ttl: UInt8 = 10, rssi: Int8 = -60,
        from: Int64 = 0, every: Int64 = 250_000, count: Int, countingUp: Bool = false
    ) -> [Frame] {
        FaultCaptures.repeated(
            address, zone: zone, mode: mode, sequence: sequence, ttl: ttl, rssi: rssi, from: from, every: every,
            count: count, countingUp: countingUp)
    }

    /// A real red flag in zone 1 and a forged evacuation in zone 9, both for 10 s.
    static var zoneAttack: [Frame] {
        FaultCaptures.merged(
            Self.repeated(Self.real, zone: 1, mode: .redFlag, sequence: 10, count: 40),
            Self.repeated(Self.forger, zone: 9, mode: .evacuation, sequence: 10, count: 40))
    }

    @Test func theZoneFilterIgnoresForgedFramesInOtherZones() throws {
        let open = try AirOutcome.replay(Self.zoneAttack, name: "no zone filter")
        #expect(open.saw("evacuation", zone: 9), "\(open.published)")
        let filtered = try AirOutcome.replay(Self.zoneAttack, flags: ["--zones", "1,2"], name: "zone filter")
        #expect(filtered.saw("red_flag", zone: 1), "\(filtered.published)")
        #expect(!filtered.saw("evacuation"), "\(filtered.published)")
        #expect(filtered.counter("filtered_zone") == 40)
    }

    @Test func theRSSIFloorIgnoresWeakForgedFrames() throws {
        let frames = FaultCaptures.merged(
            Self.repeated(Self.real, zone: 1, mode: .safetyCar, sequence: 10, count: 40),
            Self.repeated(Self.forger, zone: 2, mode: .evacuation, sequence: 10, rssi: -95, count: 40))
        let outcome = try AirOutcome.replay(frames, name: "rssi floor")
        #expect(outcome.saw("safety_car", zone: 1), "\(outcome.published)")
        #expect(!outcome.saw("evacuation"), "\(outcome.published)")
        #expect(outcome.counter("filtered_rssi") == 40)
        let lowered = try AirOutcome.replay(frames, flags: ["--min-rssi", "-100"], name: "rssi floor -100")
        #expect(lowered.saw("evacuation", zone: 2), "\(lowered.published)")
    }

    @Test func theAllowListIgnoresOtherAddresses() throws {
        let frames = FaultCaptures.merged(
            Self.repeated(Self.real, zone: 3, mode: .redFlag, sequence: 10, count: 40),
            Self.repeated(Self.forger, zone: 3, mode: .evacuation, sequence: 10, count: 40))
        let open = try AirOutcome.replay(frames, name: "no allow list")
        #expect(open.saw("evacuation", zone: 3), "\(open.published)")
        let outcome = try AirOutcome.replay(
            frames, config: "fusion:\n  allow: [C0:FF:EE:00:00:03]\n", name: "allow list")
        #expect(!outcome.saw("evacuation"), "\(outcome.published)")
        #expect(outcome.fromBeacons.allSatisfy { $0.beacon?.hasSuffix("C0:FF:EE:00:00:03") == true })
        #expect(outcome.saw("red_flag", zone: 3), "\(outcome.published)")
        #expect(outcome.counter("filtered_allow") == 40)
    }

    /// A forger claiming −127 dBm TX power (once estimated at 0 m) at −88 dBm RSSI: estimated with the
    /// default P1m (−59 dBm) at about 12 m, past the 10 m gate.
    @Test func theDistanceGateIgnoresAFarForgerWhateverTXPowerItClaims() throws {
        var forged = Self.repeated(Self.forger, zone: 2, mode: .evacuation, sequence: 10, rssi: -88, count: 40)
        for index in forged.indices { forged[index].txPower = -127 }
        let real = Self.repeated(Self.real, zone: 1, mode: .redFlag, sequence: 10, rssi: -50, count: 40)
        let frames = FaultCaptures.merged(real, forged)
        let open = try AirOutcome.replay(frames, name: "no distance gate")
        #expect(open.saw("evacuation", zone: 2), "\(open.published)")
        let outcome = try AirOutcome.replay(frames, config: "fusion:\n  max_distance_m: 10\n", name: "distance gate")
        #expect(outcome.saw("red_flag", zone: 1), "\(outcome.published)")
        #expect(!outcome.saw("evacuation"), "\(outcome.published)")
        #expect(outcome.counter("filtered_distance") == 40)
    }

    /// One forged red flag with TTL 255 s at 0 s; a real beacon's `normal` every second from 0.5 s,
    /// its sequence counting up from 1000, for 130 s. With the default cap (120 s) the red flag
    /// gives way to the real beacon at 120 s of capture time: the frame then in force is the one of
    /// 119.5 s, sequence 1119. With `fusion.max_ttl: 255` it outlasts the real beacon.
    @Test func theTTLCapEndsAForgedFrameAfter120Seconds() throws {
        let forged = Frame(
            micros: 0, address: Self.forger, signal: .circuit(zone: 5, mode: .redFlag, sequence: 1, ttl: 255))
        let real = Self.repeated(
            Self.real, zone: 1, mode: .normal, sequence: 1000, from: 500_000, every: 1_000_000, count: 130,
            countingUp: true)
        let capped = try AirOutcome.replay([forged] + real, name: "ttl cap")
        let after = capped.fromBeacons.drop { $0.mode != "red_flag" }.dropFirst().first
        #expect(after?.mode == "normal" && after?.zone == 1, "\(capped.published)")
        #expect(after?.beaconSeq == 1119, "\(capped.published)")
        let uncapped = try AirOutcome.replay([forged] + real, config: "fusion:\n  max_ttl: 255\n", name: "ttl 255")
        #expect(uncapped.saw("red_flag", zone: 5), "\(uncapped.published)")
        #expect(!uncapped.fromBeacons.drop { $0.mode != "red_flag" }.contains { $0.mode == "normal" })
    }

    /// A forged frame with the highest sequence, from another address in the same zone, cannot make
    /// the real beacon's later frames look older: its own lowering (sequence 501) is taken.
    @Test func aHugeSequenceFromAnotherAddressDoesNotAgeTheRealBeacon() throws {
        let frames = FaultCaptures.merged(
            Self.repeated(Self.real, zone: 3, mode: .redFlag, sequence: 500, count: 40),
            [
                Frame(
                    micros: 1_000_000, address: Self.forger,
                    signal: .circuit(zone: 3, mode: .normal, sequence: 65535, ttl: 255))
            ],
            Self.repeated(Self.real, zone: 3, mode: .normal, sequence: 501, from: 10_000_000, count: 40))
        let outcome = try AirOutcome.replay(frames, name: "keys per address")
        let lowered = outcome.fromBeacons.drop { $0.mode != "red_flag" }.dropFirst().first
        #expect(lowered?.mode == "normal" && lowered?.beaconSeq == 501, "\(outcome.published)")
        #expect(lowered?.beacon?.hasSuffix("C0:FF:EE:00:00:03") == true, "\(outcome.published)")
        #expect(outcome.counter("older_ignored") == 0)
    }

    /// The attack docs/security.md describes: the real beacon sends evacuation (sequence 500) four
    /// times a second for 320 s; the forger, on the same address, sends normal with sequence 501 and
    /// TTL 255 at −88 dBm every 2 s for the first 3 minutes (its claim, capped at 120 s, ends before
    /// the real beacon's). The evacuation stays, contested, and normal is never published; a
    /// spoofing warning at most once a minute.
    @Test func aForgerOnTheRealKeyCannotHideTheEvacuation() throws {
        let frames = FaultCaptures.merged(
            Self.repeated(Self.real, zone: 3, mode: .evacuation, sequence: 500, count: 1280),
            Self.repeated(
                Self.real, zone: 3, mode: .normal, sequence: 501, ttl: 255, rssi: -88, from: 100_000, every: 2_000_000,
                count: 90))
        let outcome = try AirOutcome.replay(frames, name: "claims per key")
        #expect(outcome.saw("evacuation", zone: 3), "\(outcome.published)")
        #expect(!outcome.saw("normal"), "\(outcome.published)")
        #expect(outcome.counter("contests") >= 1)
        let warnings = outcome.lines("possible spoofing")
        #expect((1...3).contains(warnings), "\(warnings) spoofing warnings")
    }

    /// 10,000 forged `normal` frames (TTL 255, so 120 s) from random addresses into a table of 256,
    /// beside a real red flag heard for 200 s: the red flag is never evicted (no other beacon state
    /// is ever published).
    @Test func aFloodOfNormalFramesCannotEvictARealRedFlag() throws {
        var random = SplitMix64(seed: 256)
        let flood = (0..<10_000).map { index in
            Frame(
                micros: 2_000_000 + Int64(index) * 1_000,
                address: UInt64.random(in: 1...0xFFFF_FFFF_FFFF, using: &random),
                signal: .circuit(zone: UInt16(index % 50), mode: .normal, sequence: 1, ttl: 255))
        }
        let real = Self.repeated(Self.real, zone: 3, mode: .redFlag, sequence: 10, count: 800)
        let frames = FaultCaptures.merged(real, flood)
        let outcome = try AirOutcome.replay(frames, config: "fusion:\n  max_entries: 256\n", name: "bounded table")
        #expect(outcome.saw("red_flag", zone: 3), "\(outcome.published)")
        #expect(outcome.fromBeacons.allSatisfy { $0.mode == "red_flag" }, "\(outcome.published)")
        #expect(outcome.counter("evicted") > 0 || outcome.counter("refused") > 0)
        #expect(outcome.counter("overrides") <= 256)
    }
}
