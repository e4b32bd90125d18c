// Target `georacing`: the GeoRacing payload decoder, both ways.
// - Any bytes: the buffer and collection decoders agree, and an accepted frame re-encodes to the
//   very same bytes (encode(decode(b)) == b).
// - A frame built from the bytes' fields: decode(encode(x)) == x, alone and inside advertising
//   data for any company id.
// - The v3 layout (GeoRacingSignedFrame): only 24 bytes of version 3 lay out, and re-encode to
//   themselves; a laid-out frame is a signal exactly when its kind is circuit or staff, and then
//   the signal and the frame say the same.
import BLEPayload

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzGeoRacingPayload(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var input = FuzzInput(data, size)
    let bytes = Array(input.bytes)

    let fromBuffer = Result { () throws(GeoRacingRejection) in try GeoRacingSignal(parsing: input.bytes) }
    let fromCollection = Result { () throws(GeoRacingRejection) in try GeoRacingSignal(parsing: bytes[...]) }
    fuzzCheck(fromBuffer == fromCollection, "buffer and collection decoders disagree: \(bytes)")
    if case .success(let signal) = fromBuffer {
        fuzzCheck(signal.encoded() == bytes, "accepted \(bytes) re-encodes to \(signal.encoded())")
        fuzzCheck([2, 8, 9, 13, 24].contains(bytes.count), "accepted a \(bytes.count)-byte frame")
        fuzzCheck(signal.isSigned == (bytes.count == 24), "\(bytes): signed is \(signal.isSigned)")
    }
    // A user beacon is one only where no signal is, and only at its two lengths.
    let user = bytes.withUnsafeBytes { GeoRacingUserBeacon(parsing: $0) }
    if let user {
        fuzzCheck((try? fromBuffer.get()) == nil, "\(bytes) is both a signal and a user beacon")
        fuzzCheck([5, 13].contains(bytes.count) && bytes[0] == 1, "accepted \(bytes) as a user beacon")
        let location: (latitude: Float, longitude: Float)? =
            user.carriesLocation ? (Float(bitPattern: 0), Float(bitPattern: 0)) : nil
        let again = GeoRacingUserBeacon.frame(uidHash: user.uidHash, location: location)
        fuzzCheck(Array(again.prefix(5)) == Array(bytes.prefix(5)), "user beacon \(bytes) re-encodes to \(again)")
    }

    let signed = Result { () throws(GeoRacingRejection) in try GeoRacingSignedFrame(parsing: input.bytes) }
    if case .success(let frame) = signed {
        fuzzCheck(frame.encoded() == bytes, "v3 \(bytes) re-encodes to \(frame.encoded())")
        fuzzCheck(bytes.count == 24 && bytes[0] == 3, "laid out a \(bytes.count)-byte v3 frame")
        switch (frame.kind, fromBuffer) {
        case (.circuit, .success(let signal)), (.staff, .success(let signal)):
            fuzzCheck(GeoRacingSignedFrame(signal) == frame, "v3 \(bytes) reads as \(signal), not as \(frame)")
        case (.other, .failure(.badKind)):
            break
        default:
            fuzzCheck(false, "v3 \(bytes) of kind \(frame.kind) decodes to \(fromBuffer)")
        }
    }

    let version = GeoRacingSignal.Version.allCases[Int(input.u8()) % GeoRacingSignal.Version.allCases.count]
    let withTemperature = input.bool()
    let signal = GeoRacingSignal(
        version: version, zone: input.u16(),
        mode: version == .v3 ? GeoRacingMode(v3RawValue: input.u8()) : GeoRacingMode(rawValue: input.u8()),
        flags: input.u8(), sequence: input.u16(), ttl: input.u8(), temperature: withTemperature ? input.u8() : nil,
        sourceID: input.u32(), reserved: input.u8(),
        signature: GeoRacingSignature(
            keyID: input.u8(), kind: input.bool() ? .staff : .circuit, signedAt: input.u32(),
            tag: UInt64(input.u32()) << 32 | UInt64(input.u32())))
    let encoded = signal.encoded()
    let decoded = Result { () throws(GeoRacingRejection) in try GeoRacingSignal(parsing: encoded) }
    fuzzCheck(decoded == .success(signal), "\(signal) encodes to \(encoded), which decodes to \(decoded)")

    let companyID = input.u16()
    let advertising = signal.advertisingData(companyID: companyID)
    advertising.withUnsafeBytes { raw in
        let match = GeoRacingDecoder(companyID: companyID).decode(AdvertisingData(raw))
        guard case .signal(let found) = match else {
            fuzzCheck(false, "advertising data \(advertising) of \(signal) gives \(match)")
            return
        }
        fuzzCheck(found == signal, "advertising data of \(signal) decodes to \(found)")
    }
    return 0
}

func fuzzSeeds(_ sources: SeedSources) -> [[UInt8]] {
    var seeds: [[UInt8]] = [
        GeoRacingSignal.circuit(zone: 7, mode: .redFlag, sequence: 42, ttl: 30).encoded(),
        GeoRacingSignal.circuit(zone: 1, mode: .evacuation, sequence: 65_535, ttl: 0, temperature: 251).encoded(),
        GeoRacingSignal(command: .evacuate).encoded(), [0xFF, 3], [0xFF],
        GeoRacingUserBeacon.frame(uidHash: 0x1201_5432), GeoRacingUserBeacon.frame(uidHash: 7, location: (41.57, 2.26)),
        GeoRacingSignal.staff(sourceID: 0xDEAD_BEEF, zone: 3, mode: .safetyCar, sequence: 1, ttl: 120).encoded(),
        GeoRacingSignal.circuit(zone: 2, mode: .unknown(9), sequence: 3).encoded(),
        [], [1], [2], [3, 0, 0, 0, 0, 0, 0, 0],
        GeoRacingSignedFrame(
            keyID: 1, kind: .circuit, zone: 7, mode: .evacuation, sequence: 42, ttl: 10, temperature: 12,
            signedAt: 1_795_852_800
        ).encoded(),
    ]
    for report in sources.reports(limit: 5_000) {
        report.withReport { report in
            for entry in report.data.manufacturerData where entry.payload.count <= 32 {
                seeds.append(Array(entry.payload))
            }
        }
    }
    return Array(seeds.prefix(300))
}
