import BLEPayload
import Testing

@Suite struct LinkLayerTests {
    /// An ADV_IND from the nRF Sniffer capture (AdvA D1:5C:F0:EE:02:8F), with its CRC.
    static let advInd: [UInt8] = [
        0xD6, 0xBE, 0x89, 0x8E, 0x60, 0x0F,
        0x8F, 0x02, 0xEE, 0xF0, 0x5C, 0xD1,
        0x02, 0x01, 0x06, 0x05, 0xFF, 0x87, 0x00, 0x0F, 0xDD,
        0xCA, 0xC6, 0x65,
    ]

    @Test func crcMatchesRealPacketAndCatchesAFlippedBit() {
        Self.advInd.withUnsafeBytes { #expect(LinkLayerAdvertising.crcMatches(packet: $0) == true) }
        var corrupted = Self.advInd
        corrupted[14] ^= 0x01
        corrupted.withUnsafeBytes { #expect(LinkLayerAdvertising.crcMatches(packet: $0) == false) }
        Array(Self.advInd.prefix(20)).withUnsafeBytes { #expect(LinkLayerAdvertising.crcMatches(packet: $0) == nil) }
    }

    @Test func decodesAdvIndWithRandomAddress() {
        var reports: [OwnedAdvertisingReport] = []
        let skip = Self.advInd.withUnsafeBytes { raw in
            LinkLayerAdvertising.decode(packet: raw, rssi: -34, timestamp: 7) { reports.append($0.owned()) }
        }
        #expect(skip == nil)
        #expect(reports.first?.kind == .advInd)
        #expect(reports.first?.addressType == .randomDevice)
        #expect(reports.first?.address.description == "D1:5C:F0:EE:02:8F")
        #expect(reports.first?.data == [0x02, 0x01, 0x06, 0x05, 0xFF, 0x87, 0x00, 0x0F, 0xDD])
        #expect(reports.first?.rssi == -34)
    }

    @Test func skipsDataChannelAndNonReportPDUs() {
        var dataChannel = Self.advInd
        dataChannel[1] = 0x00
        dataChannel.withUnsafeBytes {
            #expect(LinkLayerAdvertising.decode(packet: $0, rssi: nil, timestamp: 0) { _ in } == .notAdvertisingChannel)
        }
        var scanRequest = Self.advInd
        scanRequest[4] = 0x43
        scanRequest.withUnsafeBytes {
            #expect(LinkLayerAdvertising.decode(packet: $0, rssi: nil, timestamp: 0) { _ in } == .notAReportPDU(3))
        }
        var overlong = Self.advInd
        overlong[5] = 0x30
        overlong.withUnsafeBytes {
            #expect(LinkLayerAdvertising.decode(packet: $0, rssi: nil, timestamp: 0) { _ in } == .malformed(offset: 5))
        }
    }

    @Test func directedAdvertisingHasTargetAndNoData() {
        let packet: [UInt8] = [
            0xD6, 0xBE, 0x89, 0x8E, 0x41, 0x0C, 1, 2, 3, 4, 5, 6, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66,
        ]
        var reports: [OwnedAdvertisingReport] = []
        _ = packet.withUnsafeBytes {
            LinkLayerAdvertising.decode(packet: $0, rssi: nil, timestamp: 0) { reports.append($0.owned()) }
        }
        #expect(reports.first?.kind == .advDirectInd)
        #expect(reports.first?.directAddress?.description == "66:55:44:33:22:11")
        #expect(reports.first?.data == [])
    }

    static func nordicRecord(flags: UInt8, packet: [UInt8], version: UInt8 = 3) -> [UInt8] {
        let payloadLength = 10 + packet.count
        return [
            0x00, UInt8(payloadLength), 0x00, version, 0x87, 0xC5, 0x02, 0x0A, flags, 0x27, 0x22, 0x00, 0x00,
            0xAC, 0xAE, 0x47, 0x36,
        ] + packet
    }

    @Test func nordicSnifferHeaderGivesRSSIAndCRCStatus() throws {
        var capture = PcapWriter.fileHeader(linkType: 272)
        PcapWriter.appendRecord(to: &capture, timestamp: 1, packet: Self.nordicRecord(flags: 0x01, packet: Self.advInd))
        PcapWriter.appendRecord(to: &capture, timestamp: 2, packet: Self.nordicRecord(flags: 0x00, packet: Self.advInd))
        PcapWriter.appendRecord(
            to: &capture, timestamp: 3, packet: Self.nordicRecord(flags: 0x01, packet: Self.advInd, version: 1))
        let (reports, extractor) = try extractReports(capture)
        #expect(reports.count == 1)
        #expect(reports.first?.rssi == -34)
        #expect(extractor.counters.linkLayerBadCRC == 1)
        #expect(extractor.counters.malformedRecords == 1)
        let (withBad, _) = try extractReports(capture, deliversBadCRC: true)
        #expect(withBad.map(\.crcFailed) == [false, true])
    }

    static func phdrRecord(flags: UInt16, signal: Int8, packet: [UInt8]) -> [UInt8] {
        [0x0C, UInt8(bitPattern: signal), 0x00, 0x00, 0, 0, 0, 0, UInt8(flags & 0xFF), UInt8(flags >> 8)] + packet
    }

    @Test func pseudoHeaderFlagsDecideRSSIAndCRC() throws {
        var corrupted = Self.advInd
        corrupted[14] ^= 0x01
        var capture = PcapWriter.fileHeader(linkType: 256)
        // Signal power valid; CRC checked and valid.
        PcapWriter.appendRecord(
            to: &capture, timestamp: 1, packet: Self.phdrRecord(flags: 0x0C03, signal: -50, packet: Self.advInd))
        // CRC checked and invalid: dropped even though the bytes are fine.
        PcapWriter.appendRecord(
            to: &capture, timestamp: 2, packet: Self.phdrRecord(flags: 0x0403, signal: -50, packet: Self.advInd))
        // CRC not checked by the sniffer: beacond checks it; this one is corrupted.
        PcapWriter.appendRecord(
            to: &capture, timestamp: 3, packet: Self.phdrRecord(flags: 0x0001, signal: -50, packet: corrupted))
        // Not checked, intact, no signal power.
        PcapWriter.appendRecord(
            to: &capture, timestamp: 4, packet: Self.phdrRecord(flags: 0x0001, signal: -50, packet: Self.advInd))
        let (reports, extractor) = try extractReports(capture)
        #expect(reports.map(\.timestamp) == [1, 4])
        #expect(reports.map(\.rssi) == [-50, nil])
        #expect(extractor.counters.linkLayerBadCRC == 2)
    }
}
