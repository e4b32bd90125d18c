import BLEPayload
import Testing

/// Every frame family GeoRacing's apps send on 0x1234, at its edge lengths (docs/frames.md).
@Suite struct GeoRacingFrameFamilyTests {
    /// The decoder's verdict on one manufacturer-data payload.
    static func match(_ payload: [UInt8]) -> GeoRacingMatch {
        var builder = AdvertisingDataBuilder()
        builder.appendManufacturerData(companyID: GeoRacingSignal.defaultCompanyID, payload: payload)
        return builder.bytes.withUnsafeBytes { GeoRacingDecoder().decode(AdvertisingData($0)) }
    }

    static func family(_ match: GeoRacingMatch) -> String {
        switch match {
        case .none: "none"
        case .signal(let signal):
            switch signal.version {
            case .v1: "v1"
            case .v2: "v2"
            case .v3: "v3"
            case .command: "command"
            }
        case .userBeacon(let user): user.carriesLocation ? "user+location" : "user"
        case .rejected(let rejection): rejection.reason
        }
    }

    /// Version byte 1 at every length 0 to 14: 5 and 13 are user beacons, 8 and 9 circuit frames.
    @Test(arguments: 1...14)
    func versionOneByLength(length: Int) {
        let payload = [UInt8(1)] + [UInt8](repeating: 0, count: length - 1)
        let expected =
            switch length {
            case 5: "user"
            case 8, 9: "v1"
            case 13: "user+location"
            default: "bad_length"
            }
        #expect(Self.family(Self.match(payload)) == expected)
    }

    /// Version byte 2 is a staff frame at 13 bytes only; 0xFF a command at 2 bytes only.
    @Test(arguments: 1...14)
    func staffAndCommandByLength(length: Int) {
        let staff = [UInt8(2)] + [UInt8](repeating: 0, count: length - 1)
        #expect(Self.family(Self.match(staff)) == (length == 13 ? "v2" : "bad_length"))
        let command = [UInt8(0xFF)] + [UInt8](repeating: 1, count: length - 1)
        #expect(Self.family(Self.match(command)) == (length == 2 ? "command" : "bad_length"))
    }

    /// Version byte 3 is a signed frame at 24 bytes only, of kind circuit (0) or staff (1) only.
    @Test(arguments: 1...30)
    func signedByLength(length: Int) {
        let circuit = [UInt8(3)] + [UInt8](repeating: 0, count: length - 1)
        #expect(Self.family(Self.match(circuit)) == (length == 24 ? "v3" : "bad_length"))
        guard length == 24 else { return }
        for kind in UInt8(0)...15 {
            var frame = circuit
            frame[1] = 0x20 | kind
            #expect(Self.family(Self.match(frame)) == (kind <= 1 ? "v3" : "bad_kind"))
        }
    }

    @Test(arguments: [
        (GeoRacingCommand.normal, GeoRacingMode.normal, UInt8(0)), (.evacuate, .evacuation, 30),
        (.danger, .redFlag, 30),
    ])
    func commandFramesReadAsTheirMode(command: GeoRacingCommand, mode: GeoRacingMode, ttl: UInt8) throws {
        let signal = try GeoRacingSignal(parsing: [0xFF, command.rawValue])
        #expect(signal.version == .command)
        #expect(signal.command == command)
        #expect(signal.mode == mode)
        #expect(signal.ttl == ttl)
        #expect(signal.zone == 0 && signal.sequence == 0 && signal.sourceID == nil && signal.temperature == nil)
        #expect(signal.encoded() == [0xFF, command.rawValue])
        #expect(GeoRacingSignal(command: command) == signal)
    }

    @Test func aCommandByteOutsideZeroToTwoIsRejectedNotGuessed() {
        for byte in UInt8(3)...UInt8(255) {
            #expect(Self.family(Self.match([0xFF, byte])) == "bad_command")
        }
    }

    /// A command signal made with any mode sends normal, evacuate, or danger for any flag.
    @Test func aCommandSignalOfAnyModeEncodesTheFailSafeCommand() {
        let modes: [(GeoRacingMode, GeoRacingCommand)] = [
            (.normal, .normal), (.safetyCar, .danger), (.redFlag, .danger), (.evacuation, .evacuate),
            (.unknown(9), .danger),
        ]
        for (mode, command) in modes {
            let signal = GeoRacingSignal(version: .command, zone: 9, mode: mode, sequence: 4, ttl: 99)
            #expect(signal.command == command)
            #expect(signal.encoded() == [0xFF, command.rawValue])
            #expect(signal == GeoRacingSignal(command: command))
        }
    }

    /// The attendee app's frames, byte for byte as `BeaconAdvertiser.startAdvertising` builds them
    /// (`"STAFF_001".hashCode()` is 0x12015432); the location is neither decoded nor kept.
    @Test func userBeaconsAsTheAttendeeAppSendsThem() throws {
        let bare = GeoRacingUserBeacon.frame(uidHash: 0x1201_5432)
        #expect(bare == [0x01, 0x12, 0x01, 0x54, 0x32])
        let located = GeoRacingUserBeacon.frame(uidHash: 0x1201_5432, location: (41.57, 2.26))
        #expect(located.count == 13)
        #expect(Array(located[5...8]) == [0x42, 0x26, 0x47, 0xAE])
        guard case .userBeacon(let user) = Self.match(located) else {
            Issue.record("a 13-byte version-1 frame must be a user beacon")
            return
        }
        #expect(user == GeoRacingUserBeacon(uidHash: 0x1201_5432, carriesLocation: true))
        guard case .userBeacon(let plain) = Self.match(bare) else {
            Issue.record("a 5-byte version-1 frame must be a user beacon")
            return
        }
        #expect(plain == GeoRacingUserBeacon(uidHash: 0x1201_5432, carriesLocation: false))
    }

    /// In one advert, a signal wins over a user beacon, and a user beacon over a rejection.
    @Test func aSignalThenAUserBeaconThenARejection() {
        var builder = AdvertisingDataBuilder()
        builder.appendManufacturerData(companyID: 0x1234, payload: [0x07, 1])
        builder.appendManufacturerData(companyID: 0x1234, payload: GeoRacingUserBeacon.frame(uidHash: 1))
        let withoutSignal = builder.bytes.withUnsafeBytes { GeoRacingDecoder().decode(AdvertisingData($0)) }
        #expect(Self.family(withoutSignal) == "user")
        builder.appendManufacturerData(companyID: 0x1234, payload: [0xFF, 1])
        let withSignal = builder.bytes.withUnsafeBytes { GeoRacingDecoder().decode(AdvertisingData($0)) }
        #expect(Self.family(withSignal) == "command")
    }
}
