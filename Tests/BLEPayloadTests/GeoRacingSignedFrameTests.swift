import BLEPayload
import PropertyBased
import Testing

/// The v3 frame's layout (docs/frames.md, "v3"): bytes in, fields out, and back.
@Suite struct GeoRacingSignedFrameTests {
    /// docs/frames.md's worked example: key id 1, circuit, zone 7, evacuation, sequence 42, TTL 10,
    /// 12 °C, signed at 2026-11-28T08:00:00Z, then its tag.
    static let example: [UInt8] = [
        0x03, 0x10, 0x00, 0x07, 0x03, 0x00, 0x00, 0x2A, 0x0A, 0x0C, 0x6B, 0x0A, 0x8A, 0x00, 0x00, 0x00,
        0xC4, 0xE1, 0xCD, 0xBC, 0xC1, 0xEC, 0x7B, 0x4E,
    ]

    @Test func theWorkedExampleReadsAsDocumented() throws {
        let frame = try GeoRacingSignedFrame(parsing: Self.example)
        #expect(frame.keyID == 1 && frame.kind == .circuit && frame.zone == 7 && frame.mode == .evacuation)
        #expect(frame.flags == 0 && frame.sequence == 42 && frame.ttl == 10 && frame.temperature == 12)
        #expect(frame.signedAt == 1_795_852_800 && frame.sourceID == 0)
        #expect(frame.tag == Array(Self.example.suffix(8)))
        #expect(frame.signedPart == Array(Self.example.prefix(16)))
        #expect(frame.encoded() == Self.example)
        // With Flags it fills one legacy advertisement exactly.
        #expect(frame.advertisingData().count == 31)
    }

    @Test func everyModeHasItsByte() {
        let modes: [GeoRacingSignedFrame.Mode] = [
            .normal, .safetyCar, .redFlag, .evacuation, .yellowFlag, .vsc, .unknown,
        ]
        #expect(modes.map(\.rawValue) == [0, 1, 2, 3, 4, 5, 6])
        #expect(
            modes.map(\.name) == ["normal", "safety_car", "red_flag", "evacuation", "yellow_flag", "vsc", "unknown"])
        #expect(modes.allSatisfy { $0.isDefined })
        #expect(
            !GeoRacingSignedFrame.Mode(rawValue: 7).isDefined
                && GeoRacingSignedFrame.Mode(rawValue: 7).name == "unknown")
        #expect(GeoRacingSignedFrame.Kind(rawValue: 0x21) == .staff)
        #expect(GeoRacingSignedFrame.Kind(rawValue: 0x0F) == .other(15))
    }

    @Test func roundTripsAnyFrame() async {
        await propertyCheck(count: 500, input: Gen.uint8().array(of: 23)) { raw in
            let bytes = [GeoRacingSignedFrame.version] + raw
            let frame = try? GeoRacingSignedFrame(parsing: bytes)
            #expect(frame?.encoded() == bytes)
            if let frame {
                let rebuilt = GeoRacingSignedFrame(
                    keyID: frame.keyID, kind: frame.kind, zone: frame.zone, mode: frame.mode, flags: frame.flags,
                    sequence: frame.sequence, ttl: frame.ttl, temperature: frame.temperature,
                    signedAt: frame.signedAt, sourceID: frame.sourceID, tag: frame.tag)
                #expect(rebuilt == frame)
            }
        }
    }

    @Test func onlyTwentyFourBytesOfVersionThreeAreAFrame() async {
        await propertyCheck(count: 500, input: Gen.uint8().array(of: 0...40)) { bytes in
            do throws(GeoRacingRejection) {
                let frame = try GeoRacingSignedFrame(parsing: bytes)
                #expect(bytes.count == 24 && bytes[0] == 3 && frame.encoded() == bytes)
            } catch {
                let expected: GeoRacingRejection = bytes.first == 3 ? .badLength : .badVersion
                #expect(error == expected)
            }
        }
    }

    @Test func theMessageStartsWithTheDomainAndTheCompanyIDAsOnTheAir() {
        let message = GeoRacingSignedFrame.message(signedPart: Array(Self.example.prefix(16)), companyID: 0x1234)
        #expect(message.prefix(12) == ArraySlice("GeoRacing-v3".utf8))
        #expect(Array(message[12..<14]) == [0x34, 0x12])
        #expect(Array(message.suffix(16)) == Array(Self.example.prefix(16)))
    }

    /// The decoder reads a v3 frame as a signal: v1's fields where they mean the same, and what
    /// v3 adds in its signature; the 7 modes by v3's numbers, unlike v1's.
    @Test func theDecoderReadsTheWorkedExampleAsASignal() throws {
        let signal = try GeoRacingSignal(parsing: Self.example)
        #expect(signal.version == .v3 && signal.isSigned)
        #expect(signal.zone == 7 && signal.mode == .evacuation && signal.sequence == 42 && signal.ttl == 10)
        #expect(signal.temperature == 12 && signal.sourceID == 0)
        #expect(
            signal.signature
                == GeoRacingSignature(keyID: 1, kind: .circuit, signedAt: 1_795_852_800, tag: 0xC4E1_CDBC_C1EC_7B4E))
        #expect(signal.signature?.tagBytes == Array(Self.example.suffix(8)))
        #expect(signal.encoded() == Self.example)
        #expect(GeoRacingSignedFrame(signal)?.encoded() == Self.example)
        #expect(try GeoRacingSignedFrame(parsing: Self.example).signal() == signal)
    }

    @Test func v3ModesAreV3sNumbers() throws {
        let expected: [UInt8: GeoRacingMode] = [
            0: .normal, 1: .safetyCar, 2: .redFlag, 3: .evacuation, 4: .yellowFlag, 5: .vsc, 6: .unknown(6),
            200: .unknown(200),
        ]
        for (byte, mode) in expected {
            var bytes = Self.example
            bytes[4] = byte
            #expect(try GeoRacingSignal(parsing: bytes).mode == mode)
            #expect(mode.rawValue == byte)
        }
        // v1 knows four modes: its byte 4 is not a yellow flag.
        #expect(try GeoRacingSignal(parsing: [1, 0, 7, 4, 0, 0, 1, 10]).mode == .unknown(4))
    }

    @Test func anyV3SignalRoundTrips() async {
        await propertyCheck(count: 500, input: Gen.uint8().array(of: 23)) { raw in
            let bytes = [GeoRacingSignedFrame.version, raw[0] & 0xF1] + raw.dropFirst()
            guard let signal = try? GeoRacingSignal(parsing: bytes) else {
                return #expect(Bool(false), "24 bytes of kind 0 or 1 are a signal")
            }
            #expect(signal.encoded() == bytes)
            #expect(GeoRacingSignedFrame(signal)?.encoded() == bytes)
        }
    }
}
