import BLEPayload
import CircuitState
import PropertyBased
import Testing

/// Signed (v3) claims in the engine (docs/fusion.md, "Signed claims"): an unsigned frame never
/// lowers or clears a key a signed claim holds; a signed claim wins a tie; a signed frame's lifetime
/// counts from its signing. The engine trusts a v3 signal: the verifier ran before it.
@Suite struct SignedClaimTests {
    static func signed(
        _ mode: GeoRacingMode, zone: UInt16 = 7, sequence: UInt16 = 1, ttl: UInt8 = 10, signedAt: UInt32 = 1_000,
        kind: GeoRacingSignedFrame.Kind = .circuit, source: UInt32 = 3
    ) -> GeoRacingSignal {
        GeoRacingSignal(
            version: .v3, zone: zone, mode: mode, sequence: sequence, ttl: ttl, sourceID: source,
            signature: GeoRacingSignature(keyID: 1, kind: kind, signedAt: signedAt, tag: 0x0102_0304_0506_0708))
    }

    static let beacon = address(7)

    @Test func anUnsignedFrameNeverLowersOrClearsASignedClaim() {
        var engine = FusionEngine()
        engine.ingest(Self.signed(.redFlag), address: Self.beacon, rssi: -60, at: 0)
        // Same key (zone 7 @ the beacon's address), a higher sequence, normal: ignored.
        #expect(engine.circuit(zone: 7, .normal, sequence: 500, from: Self.beacon, at: second) == .belowSigned)
        // A TTL-0 clear: ignored too.
        #expect(
            engine.circuit(zone: 7, .normal, sequence: 501, ttl: 0, from: Self.beacon, at: 2 * second) == .belowSigned)
        #expect(engine.published(at: 3 * second).mode == .redFlag)
        #expect(engine.counters.belowSigned == 2)
        let override = engine.activeOverrides(at: 3 * second).first
        #expect(override?.claimInForce?.signed == true && override?.sequence == 1)
    }

    /// In the fail-safe direction an unsigned frame still counts: it contests the signed claim
    /// and shows while it lasts, without replacing it.
    @Test func anUnsignedEvacuationStillRaisesASignedKey() {
        var engine = FusionEngine()
        engine.ingest(Self.signed(.redFlag, ttl: 60), address: Self.beacon, rssi: -60, at: 0)
        #expect(
            engine.circuit(zone: 7, .evacuation, sequence: 9, ttl: 5, from: Self.beacon, at: second)
                == .contested(started: true))
        #expect(engine.published(at: 2 * second).mode == .evacuation)
        #expect(engine.published(at: 6 * second).mode == .redFlag)
        #expect(engine.activeOverrides(at: 6 * second).first?.claimInForce?.signed == true)
    }

    @Test func aSignedFrameReplacesAnUnsignedClaimWhateverItsSequence() {
        var engine = FusionEngine()
        engine.circuit(zone: 7, .evacuation, sequence: 60_000, ttl: 10, from: Self.beacon, at: 0)
        #expect(
            engine.ingest(Self.signed(.normal, sequence: 1), address: Self.beacon, rssi: -60, at: second) == .replaced)
        // The replaced evacuation is held for the de-escalation hold, then the signed normal shows.
        #expect(engine.published(at: second).mode == .evacuation)
        #expect(engine.published(at: 3 * second).mode == .normal)
    }

    /// Between signed frames the order is (signing time, sequence): a transmitter that restarted
    /// its sequence with a later time is newer, an earlier time older.
    @Test func signedFramesOrderBySigningTimeThenSequence() {
        var engine = FusionEngine()
        engine.ingest(Self.signed(.redFlag, sequence: 900, signedAt: 1_000), address: Self.beacon, rssi: -60, at: 0)
        #expect(
            engine.ingest(
                Self.signed(.safetyCar, sequence: 0, signedAt: 1_005), address: Self.beacon, rssi: -60, at: second)
                == .replaced)
        #expect(
            engine.ingest(
                Self.signed(.safetyCar, sequence: 0, signedAt: 1_005), address: Self.beacon, rssi: -60, at: 2 * second)
                == .refreshed)
        #expect(
            engine.ingest(
                Self.signed(.normal, sequence: 901, signedAt: 1_004), address: Self.beacon, rssi: -60, at: 3 * second)
                == .ignoredOlder)
    }

    @Test func aSignedClaimWinsATieOfSeverity() {
        var engine = FusionEngine()
        // The unsigned red flag is louder and from a lower zone: without signatures it would lead.
        engine.circuit(zone: 1, .redFlag, sequence: 1, from: address(1), rssi: -40, at: 0)
        engine.ingest(Self.signed(.redFlag, zone: 9), address: address(2), rssi: -80, at: 0)
        let state = engine.published(at: second)
        #expect(state.mode == .redFlag && state.zone == 9)
        #expect(engine.activeOverrides(at: second).map(\.zone) == [9, 1])
    }

    /// The published key is sticky among equals, but not against a signed one: a signed claim
    /// of the same severity takes the lead from an unsigned key already on screen.
    @Test func aSignedClaimTakesTheLeadFromAStickyUnsignedOne() {
        var engine = FusionEngine()
        engine.circuit(zone: 1, .redFlag, sequence: 1, from: address(1), rssi: -40, at: 0)
        #expect(engine.published(at: 0).zone == 1)
        engine.circuit(zone: 2, .redFlag, sequence: 1, from: address(3), rssi: -30, at: second)
        #expect(engine.published(at: second).zone == 1, "an unsigned equal does not take over")
        engine.ingest(Self.signed(.redFlag, zone: 9), address: address(2), rssi: -80, at: 2 * second)
        #expect(engine.published(at: 2 * second).zone == 9)
        // Once the signed claim lapses, the unsigned keys lead again.
        #expect(engine.published(at: 12 * second + 1).zone != 9)
    }

    @Test func aSignedFramesLifetimeCountsFromItsSigning() {
        var engine = FusionEngine()
        engine.ingest(Self.signed(.evacuation, ttl: 10), address: Self.beacon, rssi: -60, age: 4 * second, at: 0)
        #expect(engine.published(at: 6 * second - 1).mode == .evacuation)
        #expect(engine.published(at: 6 * second).mode == nil)
    }

    @Test func rejectingUnsignedFramesKeepsOnlySignedOnes() {
        var engine = FusionEngine(configuration: FusionConfiguration(unsignedFrames: .reject))
        #expect(engine.circuit(zone: 1, .evacuation, at: 0) == .filtered(.unsigned))
        #expect(
            engine.ingest(GeoRacingSignal(command: .evacuate), address: address(2), rssi: -50, at: 0)
                == .filtered(.unsigned))
        #expect(engine.ingest(Self.signed(.vsc), address: Self.beacon, rssi: -60, at: 0) == .inserted)
        #expect(engine.published(at: second).mode == .vsc)
        #expect(engine.counters.filteredUnsigned == 2)
    }

    @Test func v3CarriesEveryModeAndAStaffKind() {
        var engine = FusionEngine()
        engine.ingest(Self.signed(.yellowFlag, kind: .staff, source: 44), address: Self.beacon, rssi: -60, at: 0)
        let override = engine.activeOverrides(at: 0).first
        #expect(override?.mode == .yellowFlag)
        #expect(override?.key == .staff(sourceID: 44, address: Self.beacon))
        // v3's "unknown" claims nothing.
        #expect(
            engine.ingest(Self.signed(.unknown(6), zone: 8), address: Self.beacon, rssi: -60, at: 0)
                == .filtered(.unknownMode))
    }

    /// Property: whatever unsigned frames follow on the key (any mode, sequence and TTL, clears
    /// included), the key publishes at least the signed claim's severity until that claim lapses.
    @Test func unsignedFramesNeverLowerASignedClaim() async {
        let modes: [GeoRacingMode] = [.normal, .safetyCar, .redFlag, .evacuation]
        await propertyCheck(
            count: 300, input: Gen.int(in: 0...3), Gen.uint16().array(of: 1...12), Gen.uint8(in: 0...30).array(of: 12),
            Gen.int(in: 0...3).array(of: 12)
        ) { signedMode, sequences, ttls, unsignedModes in
            var engine = FusionEngine()
            let mode = modes[signedMode]
            engine.ingest(Self.signed(mode, ttl: 20), address: Self.beacon, rssi: -60, at: 0)
            for (index, sequence) in sequences.enumerated() {
                let time = Int64(index + 1) * second
                engine.circuit(
                    zone: 7, modes[unsignedModes[index]], sequence: sequence, ttl: ttls[index], from: Self.beacon,
                    at: time)
                let published = engine.published(at: time)
                #expect((published.mode?.severity ?? -1) >= TrackMode(mode)!.severity)
            }
        }
    }
}
