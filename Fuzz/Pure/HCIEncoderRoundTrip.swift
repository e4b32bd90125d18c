// Target `hci-encoder`: decode(encode(x)) == x for HCIEventEncoder's three events. The input
// describes up to 25 reports of one kind (legacy, directed or extended) with every field the
// event can carry; the encoder refuses what does not fit (and then nothing is checked), and what
// it encodes must decode to exactly the same reports.
import BLEPayload

private func optionalByte(_ input: inout FuzzInput, excluding none: UInt8) -> Int8? {
    let value = input.u8()
    return input.bool() && value != none ? Int8(bitPattern: value) : nil
}

private func report(_ routine: Int, _ input: inout FuzzInput) -> OwnedAdvertisingReport {
    let addressType = AddressType(hciValue: input.u8())
    let address = BluetoothAddress(rawValue: input.u64() & 0xFFFF_FFFF_FFFF)
    let rssi = optionalByte(&input, excluding: 127)
    switch routine {
    case 0:
        let kind = AdvertisingPDUKind(legacyEventType: input.u8() % 5) ?? .advInd
        return OwnedAdvertisingReport(
            origin: .legacyReport, kind: kind, addressType: addressType, address: address, rssi: rssi,
            data: input.take(Int(input.u8()) % 32))
    case 1:
        return OwnedAdvertisingReport(
            origin: .directedReport, kind: .advDirectInd, addressType: addressType, address: address,
            directAddress: BluetoothAddress(rawValue: input.u64() & 0xFFFF_FFFF_FFFF), rssi: rssi, data: [])
    default:
        var properties = ExtendedEventProperties(rawValue: input.u16())
        if properties.dataStatus == 1 { properties.rawValue &= ~0x60 } // held, not delivered: not this target's
        let directAddress =
            properties.contains(.directed) && input.bool()
            ? BluetoothAddress(rawValue: input.u64() & 0xFFFF_FFFF_FFFF) : nil
        let sid = input.u8()
        return OwnedAdvertisingReport(
            origin: .extendedReport, kind: properties.legacyKind ?? .extended, properties: properties,
            addressType: addressType, address: address, directAddress: directAddress, rssi: rssi,
            txPower: optionalByte(&input, excluding: 127), sid: sid == 0xFF ? nil : sid,
            isTruncated: properties.dataStatus != 0, data: input.take(Int(input.u8())))
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHCIEncoderRoundTrip(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var input = FuzzInput(data, size)
    let routine = Int(input.u8() % 3)
    let count = 1 + Int(input.u8()) % 25
    var reports: [OwnedAdvertisingReport] = []
    for _ in 0..<count { reports.append(report(routine, &input)) }
    let encoded: [UInt8]
    do {
        switch routine {
        case 0: encoded = try HCIEventEncoder.advertisingReport(reports)
        case 1: encoded = try HCIEventEncoder.directedAdvertisingReport(reports)
        default: encoded = try HCIEventEncoder.extendedAdvertisingReport(reports)
        }
    } catch {
        return 0
    }
    var decoder = HCIEventDecoder()
    var decoded: [OwnedAdvertisingReport] = []
    let outcome = encoded.withUnsafeBytes { raw in
        decoder.decode(event: raw, timestamp: 0) { decoded.append($0.owned()) }
    }
    fuzzCheck(outcome == .advertising(reports: reports.count), "\(encoded) decodes as \(outcome)")
    for (index, (sent, received)) in zip(reports, decoded).enumerated() where sent != received {
        fuzzCheck(false, "report \(index) of \(reports.count): \(sent) came back as \(received)")
    }
    return 0
}

func fuzzSeeds(_ sources: SeedSources) -> [[UInt8]] {
    var seeds: [[UInt8]] = [[0, 1], [1, 1], [2, 1], [2, 3] + [UInt8](repeating: 0x55, count: 120)]
    for report in sources.reports(limit: 200) {
        var bytes: [UInt8] = [report.origin == .extendedReport ? 2 : 0, 0, report.addressType.hciValue]
        bytes += (0..<8).map { UInt8(truncatingIfNeeded: report.address.rawValue >> (56 - 8 * $0)) }
        bytes += [1, UInt8(bitPattern: report.rssi ?? 0), report.kind.legacyEventType ?? 0]
        bytes += [UInt8(report.data.count)] + report.data
        seeds.append(bytes)
    }
    return seeds
}
