import BLEPayload
import PropertyBased
import Testing

@Suite struct GeoRacingSignalTests {
    @Test func decodesV1WithoutTemperature() throws {
        let signal = try GeoRacingSignal(parsing: [0x01, 0x00, 0x03, 0x02, 0x00, 0x01, 0x2C, 0x0A])
        #expect(signal.version == .v1)
        #expect(signal.zone == 3)
        #expect(signal.mode == .redFlag)
        #expect(signal.flags == 0)
        #expect(signal.sequence == 0x012C)
        #expect(signal.ttl == 10)
        #expect(signal.temperature == nil)
        #expect(signal.sourceID == nil)
    }

    /// GeoRacing's Windows beacon writes the temperature as an unsigned byte, clamped 0–255 °C.
    @Test func decodesV1TemperatureAsTheUnsignedByteItIs() throws {
        let signal = try GeoRacingSignal(parsing: [0x01, 0x12, 0x34, 0x03, 0x80, 0xFF, 0xFF, 0x78, 0xF6])
        #expect(signal.zone == 0x1234)
        #expect(signal.mode == .evacuation)
        #expect(signal.flags == 0x80)
        #expect(signal.sequence == 0xFFFF)
        #expect(signal.ttl == 120)
        #expect(signal.temperature == 246)
    }

    @Test func decodesV2StaffFrameBigEndian() throws {
        let bytes: [UInt8] = [0x02, 0xDE, 0xAD, 0xBE, 0xEF, 0x00, 0x07, 0x01, 0x04, 0x00, 0x2A, 0x1E, 0x55]
        let signal = try GeoRacingSignal(parsing: bytes)
        #expect(signal.version == .v2)
        #expect(signal.sourceID == 0xDEAD_BEEF)
        #expect(signal.zone == 7)
        #expect(signal.mode == .safetyCar)
        #expect(signal.flags == 4)
        #expect(signal.sequence == 42)
        #expect(signal.ttl == 30)
        #expect(signal.reserved == 0x55)
        #expect(signal.temperature == nil)
        #expect(signal.encoded() == bytes)
    }

    @Test func unknownModeKeepsRawValue() throws {
        let signal = try GeoRacingSignal(parsing: [0x01, 0x00, 0x01, 0x09, 0x00, 0x00, 0x01, 0x0A])
        #expect(signal.mode == .unknown(9))
        #expect(signal.mode.rawValue == 9)
        #expect(!signal.mode.isKnown)
        #expect(signal.mode.name == "unknown")
    }

    @Test(arguments: [
        ([UInt8](), GeoRacingRejection.badLength),
        ([0x01], .badLength),
        ([0x01, 0, 1, 0, 0, 0, 1], .badLength),
        ([0x01, 0, 1, 0, 0, 0, 1, 10, 20, 30], .badLength),
        ([0x02, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1, 10], .badLength),
        ([0x02, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1, 10, 0, 0], .badLength),
        ([0x02, 0, 1, 0, 0, 0, 1, 10, 20], .badLength),
        ([0x00, 0, 1, 0, 0, 0, 1, 10], .badVersion),
        ([0x03, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1, 10, 0], .badLength),
        ([0x04, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1, 10, 0], .badVersion),
        ([0xFF], .badLength),
        ([0xFF, 1, 0], .badLength),
        ([0xFF, 3], .badCommand),
        ([0xFF, 0xFF], .badCommand),
        ([0xFE, 1], .badVersion),
    ])
    func rejectsWrongVersionOrLength(bytes: [UInt8], expected: GeoRacingRejection) {
        #expect(throws: expected) { try GeoRacingSignal(parsing: bytes) }
    }

    @Test func rejectionReasonsAreStableNames() {
        #expect(GeoRacingRejection.badLength.reason == "bad_length")
        #expect(GeoRacingRejection.badVersion.reason == "bad_version")
        #expect(GeoRacingRejection.badCommand.reason == "bad_command")
    }

    @Test func encodesV1ByteExact() {
        let signal = GeoRacingSignal.circuit(zone: 0x0102, mode: .safetyCar, sequence: 0xA0B0, ttl: 10, temperature: 21)
        #expect(signal.encoded() == [0x01, 0x01, 0x02, 0x01, 0x00, 0xA0, 0xB0, 0x0A, 0x15])
        let noTemperature = GeoRacingSignal.circuit(zone: 1, mode: .normal, sequence: 1)
        #expect(noTemperature.encoded().count == 8)
    }

    @Test func roundTripsAnyFrame() async {
        let versions = Gen.int(in: 0...3).map { GeoRacingSignal.Version.allCases[$0] }
        await propertyCheck(count: 500, input: versions, Gen.uint8().array(of: 12), Gen.uint8().optional) {
            version, raw, temperature in
            let signal = GeoRacingSignal(
                version: version, zone: UInt16(raw[0]) << 8 | UInt16(raw[1]),
                mode: version == .v3 ? GeoRacingMode(v3RawValue: raw[2]) : GeoRacingMode(rawValue: raw[2]),
                flags: raw[3], sequence: UInt16(raw[4]) << 8 | UInt16(raw[5]),
                ttl: raw[6], temperature: temperature,
                sourceID: UInt32(raw[7]) << 24 | UInt32(raw[8]) << 16 | UInt32(raw[9]) << 8 | UInt32(raw[10]),
                reserved: raw[11])
            let bytes = signal.encoded()
            let length =
                switch version {
                case .v1: temperature == nil ? 8 : 9
                case .v2: 13
                case .v3: 24
                case .command: 2
                }
            #expect(bytes.count == length)
            #expect((try? GeoRacingSignal(parsing: bytes)) == signal)
        }
    }

    @Test func arbitraryBytesNeverTrap() async {
        await propertyCheck(count: 1000, input: Gen.uint8().array(of: 0...20)) { bytes in
            do {
                let signal = try GeoRacingSignal(parsing: bytes)
                #expect(signal.encoded() == bytes)
            } catch {
                #expect(
                    bytes.isEmpty
                        || !(bytes[0] == 1 && (bytes.count == 8 || bytes.count == 9))
                            && !(bytes[0] == 2 && bytes.count == 13)
                            && !(bytes[0] == 0xFF && bytes.count == 2 && bytes[1] <= 2)
                )
            }
        }
    }

    @Test func decoderFindsFrameByCompanyID() {
        let signal = GeoRacingSignal.circuit(zone: 4, mode: .redFlag, sequence: 9)
        var builder = AdvertisingDataBuilder()
        builder.appendFlags(0x06)
        builder.appendManufacturerData(companyID: 0x004C, payload: [0x02, 0x15])
        builder.appendManufacturerData(companyID: 0xBEEF, payload: signal.encoded())
        builder.bytes.withUnsafeBytes { raw in
            let data = AdvertisingData(raw)
            guard case .none = GeoRacingDecoder().decode(data) else {
                Issue.record("the default company id must not match 0xBEEF")
                return
            }
            guard case .signal(let decoded) = GeoRacingDecoder(companyID: 0xBEEF).decode(data) else {
                Issue.record("expected a signal for company 0xBEEF")
                return
            }
            #expect(decoded == signal)
        }
    }

    @Test func decoderPrefersValidFrameOverEarlierRejection() {
        var builder = AdvertisingDataBuilder()
        builder.appendManufacturerData(companyID: 0x1234, payload: [0x07, 1, 2])
        builder.appendManufacturerData(
            companyID: 0x1234, payload: GeoRacingSignal.circuit(zone: 1, mode: .normal, sequence: 1).encoded())
        builder.bytes.withUnsafeBytes { raw in
            guard case .signal(let signal) = GeoRacingDecoder().decode(AdvertisingData(raw)) else {
                Issue.record("expected the valid second frame")
                return
            }
            #expect(signal.zone == 1)
        }
        var onlyBad = AdvertisingDataBuilder()
        onlyBad.appendManufacturerData(companyID: 0x1234, payload: [0x01, 1, 2])
        onlyBad.bytes.withUnsafeBytes { raw in
            guard case .rejected(let reason) = GeoRacingDecoder().decode(AdvertisingData(raw)) else {
                Issue.record("expected a rejection")
                return
            }
            #expect(reason == .badLength)
        }
    }

    @Test func advertisingDataCarriesFlagsAndFrame() {
        let signal = GeoRacingSignal.staff(sourceID: 77, zone: 2, mode: .evacuation, sequence: 3, ttl: 60)
        let bytes = signal.advertisingData()
        #expect(Array(bytes.prefix(7)) == [0x02, 0x01, 0x06, 0x10, 0xFF, 0x34, 0x12])
        #expect(Array(bytes.dropFirst(7)) == signal.encoded())
    }
}
