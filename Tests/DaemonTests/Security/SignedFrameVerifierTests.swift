import BLEPayload
import CircuitState
import PropertyBased
import Testing

@testable import BeacondCore

/// The v3 checks before the engine (docs/security.md, "Signed frames"), with the real keyring and
/// HMAC: tag, clock window, order, age on the sender's clock, and the marks across restarts.
@Suite struct SignedFrameVerifierTests {
    static let second: Int64 = 1_000_000
    /// 2026-11-28T08:00:00Z: the beacon's clock when the scenarios start.
    static let t0: UInt32 = 1_795_852_800
    static let keyring = VenueKeyringTests.keyring

    static func verifier(window: Int64 = SignedFrameVerifier.defaultClockWindow) -> SignedFrameVerifier {
        SignedFrameVerifier(
            authenticator: VenueAuthenticator(keyring: keyring, companyID: 0x1234), clockWindow: window)
    }

    /// A genuine frame of source `source`, signed at `signedAt` with `keys` (the venue's by default).
    static func frame(
        signedAt: UInt32 = t0, sequence: UInt16 = 1, mode: GeoRacingSignedFrame.Mode = .evacuation, ttl: UInt8 = 10,
        source: UInt16 = 3, zone: UInt16 = 7, keyID: UInt8 = 1, keys: VenueKeyring = keyring
    ) -> GeoRacingSignal {
        let frame = GeoRacingSignedFrame(
            keyID: keyID, kind: .circuit, zone: zone, mode: mode, sequence: sequence, ttl: ttl, signedAt: signedAt,
            sourceID: source)
        var keys = keys
        if keys.key(id: keyID, day: VenueKeyring.day(of: signedAt)) == nil {
            keys.addVenueKey([UInt8](0..<32), id: keyID)
        }
        return try! keys.signed(frame, companyID: 0x1234)!.signal()
    }

    /// The beacon's clock at `t0` plus `offset`, in µs: what a synchronised kiosk's wall clock reads.
    static func wall(_ offset: Int64 = 0) -> Int64 { Int64(t0) * second + offset }

    @Test func aGenuineFrameCountsAndARepeatCostsNoHMAC() {
        var verifier = Self.verifier()
        let frame = Self.frame()
        #expect(verifier.check(frame, at: 0, wallClock: Self.wall()) == .accepted(age: 0))
        #expect(verifier.check(frame, at: 100_000, wallClock: Self.wall(100_000)) == .accepted(age: 100_000))
        #expect(verifier.counters.tagsComputed == 1 && verifier.counters.tagsReused == 1)
        #expect(verifier.counters.accepted == 2)
        // An unsigned frame is not the verifier's business.
        #expect(verifier.check(.circuit(zone: 7, mode: .normal, sequence: 1), at: 0, wallClock: 0) == .unsigned)
    }

    /// Any single-bit change of the 24 bytes is never accepted, whichever check catches it.
    @Test func everySingleBitChangeIsRefused() throws {
        let bytes = Self.frame().encoded()
        for bit in 0..<(bytes.count * 8) {
            var changed = bytes
            changed[bit / 8] ^= 1 << (bit % 8)
            guard let signal = try? GeoRacingSignal(parsing: changed), signal.isSigned else { continue }
            var verifier = Self.verifier()
            let verdict = verifier.check(signal, at: 0, wallClock: Self.wall())
            #expect(verdict != .accepted(age: 0), "bit \(bit)")
            if case .accepted = verdict { Issue.record("bit \(bit) accepted") }
        }
    }

    @Test func aWrongKeyOrKeyIDFails() {
        var other = VenueKeyring()
        other.addVenueKey([UInt8](repeating: 0xAB, count: 32), id: 1)
        var verifier = Self.verifier()
        #expect(verifier.check(Self.frame(keys: other), at: 0, wallClock: Self.wall()) == .rejected(.badTag))
        // Key id 2 is not in the venue's file.
        var stranger = VenueKeyring()
        stranger.addVenueKey([UInt8](0..<32), id: 2)
        #expect(
            verifier.check(Self.frame(keyID: 2, keys: stranger), at: 0, wallClock: Self.wall())
                == .rejected(.unknownKey))
        // No key file: nothing verifies.
        var keyless = SignedFrameVerifier(authenticator: nil)
        #expect(keyless.check(Self.frame(), at: 0, wallClock: Self.wall()) == .rejected(.unknownKey))
        #expect(verifier.counters.rejected(.badTag) == 1 && verifier.counters.rejected(.unknownKey) == 1)
    }

    /// T is a whole second: the frame was signed within [T, T + 1 s), and the window extends that.
    @Test func signingTimesOutsideTheWindowFail() {
        let window = 30 * Self.second
        let cases: [(Int64, Bool)] = [
            (-window, true), (-window - 1, false), (Self.second + window - 1, true), (Self.second + window, false),
            (3_600 * Self.second, false), (-3_600 * Self.second, false),
        ]
        for (offset, accepted) in cases {
            var verifier = Self.verifier(window: window)
            let verdict = verifier.check(Self.frame(), at: 0, wallClock: Self.wall(offset))
            #expect((verdict == .rejected(.clockWindow)) == !accepted, "offset \(offset)")
        }
    }

    @Test func aLowerOrderAfterAHigherOneFailsAndAnEqualOneRefreshes() {
        var verifier = Self.verifier()
        #expect(
            verifier.check(Self.frame(signedAt: Self.t0 + 5, sequence: 9), at: 0, wallClock: Self.wall(5 * Self.second))
                == .accepted(age: 0))
        let now = Self.wall(6 * Self.second)
        #expect(
            verifier.check(Self.frame(signedAt: Self.t0 + 5, sequence: 8), at: 1, wallClock: now)
                == .rejected(.replayed))
        #expect(
            verifier.check(Self.frame(signedAt: Self.t0 + 4, sequence: 99), at: 1, wallClock: now)
                == .rejected(.replayed))
        #expect(
            verifier.check(Self.frame(signedAt: Self.t0 + 5, sequence: 9), at: 2, wallClock: now) == .accepted(age: 2))
        // A later signing time with a lower sequence (a transmitter that restarted) is newer.
        #expect(
            verifier.check(Self.frame(signedAt: Self.t0 + 6, sequence: 0), at: Self.second, wallClock: now)
                == .accepted(age: 0))
        #expect(verifier.counters.rejected(.replayed) == 2)
    }

    /// Property: for any two orders of one sender, the second counts exactly when it is not lower.
    @Test func orderIsLexicographicOnSigningTimeThenSequence() async {
        await propertyCheck(
            count: 200, input: Gen.uint8(in: 0...20), Gen.uint16(), Gen.uint8(in: 0...20), Gen.uint16()
        ) { firstT, firstSeq, secondT, secondSeq in
            var verifier = Self.verifier()
            let first = Self.frame(signedAt: Self.t0 + UInt32(firstT), sequence: firstSeq)
            let second = Self.frame(signedAt: Self.t0 + UInt32(secondT), sequence: secondSeq)
            _ = verifier.check(first, at: 0, wallClock: Self.wall(Int64(firstT) * Self.second))
            let verdict = verifier.check(second, at: 0, wallClock: Self.wall(Int64(secondT) * Self.second))
            let lower = (secondT, secondSeq) < (firstT, firstSeq)
            #expect((verdict == .rejected(.replayed)) == lower)
        }
    }

    @Test func theMarkSurvivesARestartAndAFastClockIsClamped() throws {
        var before = Self.verifier()
        _ = before.check(Self.frame(signedAt: Self.t0, sequence: 5), at: 0, wallClock: Self.wall())
        #expect(before.marksChanged)
        let text = SignedMarkFile.text(before.marks)
        let parsed = SignedMarkFile.parse(text, path: "signed-marks")
        #expect(parsed.errors.isEmpty)

        var after = Self.verifier()
        after.restore(parsed.marks, wallClock: Self.wall(Self.second))
        #expect(
            after.check(Self.frame(signedAt: Self.t0, sequence: 4), at: 0, wallClock: Self.wall())
                == .rejected(.replayed))
        #expect(
            after.check(Self.frame(signedAt: Self.t0, sequence: 5), at: 0, wallClock: Self.wall()) == .accepted(age: 0))

        // A mark a day ahead (a clock that once ran fast) is clamped to now + window: the genuine
        // beacon counts again once its clock passes that, not a day later.
        let ahead = [SignedSource(kind: 0, sourceID: 3, zone: 7): SignedOrder(signedAt: Self.t0 + 86_400, sequence: 1)]
        var clamped = Self.verifier()
        clamped.restore(ahead, wallClock: Self.wall())
        #expect(clamped.counters.clampedMarks == 1)
        #expect(clamped.marks.values.first == SignedOrder(signedAt: Self.t0 + 30, sequence: 0))
        let later = Self.frame(signedAt: Self.t0 + 31, sequence: 1)
        #expect(clamped.check(later, at: 0, wallClock: Self.wall(31 * Self.second)) == .accepted(age: 0))
    }

    @Test func theMarkFileNamesItsBadLines() {
        let parsed = SignedMarkFile.parse(
            "# header\ncircuit 3 7 100 5\nstaff x 1 2 3\n\nbogus\n", path: "/s/signed-marks")
        #expect(parsed.marks == [SignedSource(kind: 0, sourceID: 3, zone: 7): SignedOrder(signedAt: 100, sequence: 5)])
        #expect(parsed.errors.map(\.line) == [3, 5])
        #expect(parsed.errors.first?.description.hasPrefix("/s/signed-marks:3: ") == true)
    }

    /// A kiosk 25 s ahead of the beacon, or 25 s behind, shows a genuine evacuation for its full
    /// TTL: the frame's age is read on the beacon's clock, not the kiosk's.
    @Test(arguments: [25, -25, 0] as [Int64])
    func aSkewedKioskShowsAGenuineEvacuationForItsTTL(skewSeconds: Int64) {
        var verifier = Self.verifier()
        var engine = FusionEngine()
        let start: Int64 = 1_000 * Self.second
        let frame = Self.frame(mode: .evacuation, ttl: 10)
        guard
            case .accepted(let age) = verifier.check(frame, at: start, wallClock: Self.wall(skewSeconds * Self.second))
        else {
            Issue.record("refused at skew \(skewSeconds) s")
            return
        }
        engine.ingest(frame, address: BluetoothAddress(rawValue: 0xC0_FF_EE_00_00_07), rssi: -60, age: age, at: start)
        #expect(engine.evaluate(at: start + 10 * Self.second - 1).mode == .evacuation)
        #expect(engine.evaluate(at: start + 10 * Self.second).mode == nil)
    }

    /// A frame jammed on the air, recorded, and sent again 15 s later (inside the clock window and
    /// above the mark): its age on the beacon's clock is 15 s, so with a TTL of 10 it is born expired.
    @Test func aFrameReplayedMoreThanItsTTLLaterIsBornExpired() {
        var verifier = Self.verifier()
        for tick in 0..<5 {
            let offset = Int64(tick) * Self.second
            let frame = Self.frame(signedAt: Self.t0 + UInt32(tick), sequence: UInt16(tick))
            #expect(
                verifier.check(frame, at: offset + 200_000, wallClock: Self.wall(offset + 200_000)) == .accepted(age: 0)
            )
        }
        let jammed = Self.frame(signedAt: Self.t0 + 5, sequence: 5, ttl: 10)
        let heard = 20 * Self.second + 200_000
        #expect(verifier.check(jammed, at: heard, wallClock: Self.wall(heard)) == .rejected(.expired))
        // With a TTL longer than its delay it still counts, for what is left of it.
        let longer = Self.frame(signedAt: Self.t0 + 5, sequence: 6, ttl: 60)
        #expect(verifier.check(longer, at: heard, wallClock: Self.wall(heard)) == .accepted(age: 15 * Self.second))
    }

    @Test func eachSenderShowsItsClockOffset() throws {
        var verifier = Self.verifier()
        // The kiosk's wall clock runs 12 s ahead of the beacon's.
        _ = verifier.check(Self.frame(), at: 5 * Self.second, wallClock: Self.wall(12 * Self.second))
        let sender = try #require(verifier.senders.first)
        #expect(sender.source == SignedSource(kind: 0, sourceID: 3, zone: 7))
        #expect(sender.source.description == "circuit 3 zone 7")
        #expect(sender.clockOffset == 12 * Self.second)
        #expect(sender.mark == SignedOrder(signedAt: Self.t0, sequence: 1))
    }

    @Test func theSenderTableIsBounded() {
        var verifier = SignedFrameVerifier(
            authenticator: VenueAuthenticator(keyring: Self.keyring, companyID: 0x1234), sourceLimit: 4)
        for source in 0..<6 as Range<UInt16> {
            _ = verifier.check(Self.frame(source: source), at: Int64(source), wallClock: Self.wall())
        }
        #expect(verifier.marks.count == 4)
        #expect(verifier.counters.evictedSources == 2)
        // The two least recently accepted went.
        #expect(Set(verifier.marks.keys.map(\.sourceID)) == [2, 3, 4, 5])
    }
}
