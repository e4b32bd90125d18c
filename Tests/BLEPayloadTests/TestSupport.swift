import BLEPayload

/// Decodes one event and returns owned copies of its reports with the outcome.
func decodeEvent(
    _ event: [UInt8], with decoder: inout HCIEventDecoder, timestamp: Int64 = 0
) -> (reports: [OwnedAdvertisingReport], outcome: HCIEventDecoder.Outcome) {
    var reports: [OwnedAdvertisingReport] = []
    let outcome = event.withUnsafeBytes { raw in
        decoder.decode(event: raw, timestamp: timestamp) { reports.append($0.owned()) }
    }
    return (reports, outcome)
}

func decodeEvent(_ event: [UInt8]) -> (reports: [OwnedAdvertisingReport], outcome: HCIEventDecoder.Outcome) {
    var decoder = HCIEventDecoder()
    return decodeEvent(event, with: &decoder)
}

/// Reads every record of an in-memory capture through the extractor.
func extractReports(
    _ capture: [UInt8], deliversBadCRC: Bool = false
) throws(CaptureError) -> (reports: [OwnedAdvertisingReport], extractor: AdvertisingExtractor) {
    let reader = try CaptureReader(bytes: capture)
    var extractor = AdvertisingExtractor(deliversBadCRC: deliversBadCRC)
    var reports: [OwnedAdvertisingReport] = []
    while let packet = try reader.next() {
        extractor.process(packet) { reports.append($0.owned()) }
    }
    return (reports, extractor)
}

let sampleAddress = BluetoothAddress(rawValue: 0xC0_FF_EE_12_34_56)

func geoReport(
    zone: UInt16 = 3, mode: GeoRacingMode = .redFlag, sequence: UInt16 = 1, rssi: Int8? = -60,
    address: BluetoothAddress = sampleAddress
) -> OwnedAdvertisingReport {
    OwnedAdvertisingReport(
        kind: .advNonconnInd, addressType: .randomDevice, address: address, rssi: rssi,
        data: GeoRacingSignal.circuit(zone: zone, mode: mode, sequence: sequence).advertisingData())
}

/// A minimal pcapng writer for reader tests: section header, interface
/// descriptions and enhanced or simple packet blocks, in either byte order.
struct PcapngBuilder {
    var bytes: [UInt8] = []
    let bigEndian: Bool

    init(bigEndian: Bool = false) {
        self.bigEndian = bigEndian
        block(type: 0x0A0D_0D0A, body: u32(0x1A2B_3C4D) + u16(1) + u16(0) + u64(UInt64.max))
    }

    mutating func interface(linkType: UInt16, tsresol: UInt8? = nil) {
        var body = u16(linkType) + u16(0) + u32(262_144)
        if let tsresol {
            body += u16(9) + u16(1) + [tsresol, 0, 0, 0]
            body += u16(0) + u16(0)
        }
        block(type: 1, body: body)
    }

    mutating func enhancedPacket(interface: UInt32 = 0, timestamp: UInt64, packet: [UInt8]) {
        var body = u32(interface) + u32(UInt32(truncatingIfNeeded: timestamp >> 32))
        body += u32(UInt32(truncatingIfNeeded: timestamp)) + u32(UInt32(packet.count)) + u32(UInt32(packet.count))
        body += packet + [UInt8](repeating: 0, count: (4 - packet.count % 4) % 4)
        block(type: 6, body: body)
    }

    mutating func simplePacket(_ packet: [UInt8]) {
        block(
            type: 3, body: u32(UInt32(packet.count)) + packet + [UInt8](repeating: 0, count: (4 - packet.count % 4) % 4)
        )
    }

    mutating func customBlock() {
        block(type: 0x0000_0BAD, body: [1, 2, 3, 4])
    }

    mutating func block(type: UInt32, body: [UInt8]) {
        let length = UInt32(12 + body.count)
        bytes += u32(type) + u32(length) + body + u32(length)
    }

    func u16(_ value: UInt16) -> [UInt8] {
        withUnsafeBytes(of: bigEndian ? value.bigEndian : value.littleEndian) { Array($0) }
    }

    func u32(_ value: UInt32) -> [UInt8] {
        withUnsafeBytes(of: bigEndian ? value.bigEndian : value.littleEndian) { Array($0) }
    }

    func u64(_ value: UInt64) -> [UInt8] {
        withUnsafeBytes(of: bigEndian ? value.bigEndian : value.littleEndian) { Array($0) }
    }
}
