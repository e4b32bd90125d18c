import BLEPayload
import PropertyBased
import Testing

@Suite struct HCIEventDecoderTests {
    /// One legacy report, byte by byte: ADV_NONCONN_IND from a random address, 3 data bytes, RSSI -60.
    static let legacyEvent: [UInt8] = [
        0x3E, 0x0F, 0x02, 0x01,
        0x03, 0x01, 0x56, 0x34, 0x12, 0xEE, 0xFF, 0xC0,
        0x03, 0x02, 0x01, 0x06,
        0xC4,
    ]

    /// The reports `decoder` delivers for `fragments`, each sent in an extended report event of its own.
    static func deliver(
        _ fragments: [OwnedAdvertisingReport], to decoder: inout HCIEventDecoder
    ) throws -> [OwnedAdvertisingReport] {
        try fragments.flatMap { fragment in
            decodeEvent(try HCIEventEncoder.extendedAdvertisingReport([fragment]), with: &decoder).reports
        }
    }

    /// Expects `delivered` to be one report, marked truncated, with `count` bytes of data.
    static func expectOneTruncatedReport(
        _ delivered: [OwnedAdvertisingReport], holding count: Int, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(delivered.count == 1, sourceLocation: sourceLocation)
        #expect(delivered.first?.isTruncated == true, sourceLocation: sourceLocation)
        #expect(delivered.first?.data.count == count, sourceLocation: sourceLocation)
    }

    @Test func decodesLegacyReportByteExact() {
        let (reports, outcome) = decodeEvent(Self.legacyEvent)
        #expect(outcome == .advertising(reports: 1))
        let report = reports.first
        #expect(report?.kind == .advNonconnInd)
        #expect(report?.addressType == .randomDevice)
        #expect(report?.address.description == "C0:FF:EE:12:34:56")
        #expect(report?.data == [0x02, 0x01, 0x06])
        #expect(report?.rssi == -60)
        #expect(report?.txPower == nil)
        #expect(report?.origin == .legacyReport)
    }

    @Test func rssi127IsNotAvailable() {
        var event = Self.legacyEvent
        event[16] = 0x7F
        #expect(decodeEvent(event).reports.first?.rssi == nil)
    }

    @Test func decodesSeveralReportsOneAfterAnother() throws {
        let first = geoReport(zone: 1, sequence: 1, rssi: -50)
        let second = OwnedAdvertisingReport(
            kind: .scanRsp, addressType: .publicDevice, address: BluetoothAddress(rawValue: 0x001122334455),
            rssi: nil, data: [])
        let third = geoReport(zone: 2, mode: .evacuation, sequence: 9, rssi: -90)
        let event = try HCIEventEncoder.advertisingReport([first, second, third])
        let (reports, outcome) = decodeEvent(event)
        #expect(outcome == .advertising(reports: 3))
        #expect(reports == [first, second, third])
    }

    @Test(arguments: [0, 26])
    func rejectsReportCountsOutsideOneTo25(count: UInt8) {
        let event: [UInt8] = [0x3E, 0x02, 0x02, count]
        #expect(decodeEvent(event).outcome == .malformed(HCIEventError(offset: 3, reason: .badReportCount(Int(count)))))
    }

    @Test func rejectsLegacyDataLongerThan31() {
        var event: [UInt8] = [0x3E, 0, 0x02, 0x01, 0x00, 0x00, 1, 2, 3, 4, 5, 6, 32]
        event += [UInt8](repeating: 0, count: 33)
        event[1] = UInt8(event.count - 2)
        #expect(decodeEvent(event).outcome == .malformed(HCIEventError(offset: 12, reason: .dataTooLong(32))))
    }

    @Test func truncatedReportIsMalformedWithOffsetButEarlierReportsSurvive() throws {
        let full = try HCIEventEncoder.advertisingReport([geoReport(sequence: 1), geoReport(sequence: 2)])
        // Drop the last report's RSSI and fix the declared length.
        var event = Array(full.dropLast())
        event[1] = UInt8(event.count - 2)
        var decoder = HCIEventDecoder()
        let (reports, outcome) = decodeEvent(event, with: &decoder)
        #expect(reports.count == 1)
        guard case .malformed(let error) = outcome else {
            Issue.record("expected malformed, got \(outcome)")
            return
        }
        #expect(error.offset == event.count)
        #expect(error.reason == .truncated(needed: 1, available: 0))
        #expect(decoder.counters.malformedEvents == 1)
        #expect(decoder.counters.reports == 1)
    }

    @Test func declaredLengthMustMatch() {
        var event = Self.legacyEvent
        event[1] = 0x20
        #expect(
            decodeEvent(event).outcome
                == .malformed(HCIEventError(offset: 1, reason: .lengthMismatch(declared: 32, actual: 15))))
        #expect(
            decodeEvent([0x3E]).outcome
                == .malformed(HCIEventError(offset: 0, reason: .truncated(needed: 2, available: 1))))
    }

    @Test func reservedLegacyEventTypeIsMalformed() {
        var event = Self.legacyEvent
        event[4] = 0x07
        #expect(decodeEvent(event).outcome == .malformed(HCIEventError(offset: 4, reason: .reservedEventType(7))))
    }

    @Test func skipsOtherEventsAndSubevents() {
        var decoder = HCIEventDecoder()
        let commandComplete: [UInt8] = [0x0E, 0x04, 0x01, 0x0C, 0x20, 0x00]
        let connectionComplete: [UInt8] = [0x3E, 0x02, 0x01, 0x00]
        #expect(decodeEvent(commandComplete, with: &decoder).outcome == .skipped(eventCode: 0x0E, subevent: nil))
        #expect(decodeEvent(connectionComplete, with: &decoder).outcome == .skipped(eventCode: 0x3E, subevent: 0x01))
        #expect(decoder.counters.skippedEvents == 2)
        #expect(decoder.counters.events == 2)
    }

    @Test func decodesExtendedReportByteExact() {
        let event: [UInt8] = [
            0x3E, 0x1D, 0x0D, 0x01,
            0x01, 0x00, // connectable, not legacy, complete
            0x01, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,
            0x01, 0x03, 0x05, // PHYs, SID 5
            0xF4, 0xB5, // TX power -12, RSSI -75
            0x00, 0x00,
            0x00, 0, 0, 0, 0, 0, 0,
            0x03, 0x02, 0x01, 0x06,
        ]
        let (reports, outcome) = decodeEvent(event)
        #expect(outcome == .advertising(reports: 1))
        let report = reports.first
        #expect(report?.kind == .extended)
        #expect(report?.properties == .connectable)
        #expect(report?.address.description == "01:02:03:04:05:06")
        #expect(report?.sid == 5)
        #expect(report?.txPower == -12)
        #expect(report?.rssi == -75)
        #expect(report?.data == [0x02, 0x01, 0x06])
        #expect(report?.isTruncated == false)
    }

    @Test(arguments: AdvertisingPDUKind.allCases.filter { $0 != .extended })
    func extendedReportWithLegacyBitKeepsLegacyKind(kind: AdvertisingPDUKind) throws {
        let report = OwnedAdvertisingReport(
            origin: .extendedReport, kind: kind, properties: ExtendedEventProperties(legacy: kind),
            address: sampleAddress, rssi: -40, txPower: nil, data: [0x02, 0x01, 0x06])
        let (reports, _) = decodeEvent(try HCIEventEncoder.extendedAdvertisingReport([report]))
        #expect(reports.first?.kind == kind)
    }

    @Test func joinsFragmentsPerAddressAndSID() throws {
        var builder = AdvertisingDataBuilder()
        builder.appendManufacturerData(companyID: 0x0059, payload: [UInt8](repeating: 0xAB, count: 250))
        builder.appendManufacturerData(
            companyID: 0x1234, payload: GeoRacingSignal.circuit(zone: 8, mode: .redFlag, sequence: 4).encoded())
        let whole = OwnedAdvertisingReport(
            origin: .extendedReport, kind: .extended, properties: [], address: sampleAddress, rssi: -70, txPower: 4,
            sid: 2, data: builder.bytes)
        let other = OwnedAdvertisingReport(
            origin: .extendedReport, kind: .extended, properties: [], address: sampleAddress, rssi: -71, sid: 3,
            data: [0x02, 0x01, 0x06])
        let fragments = HCIEventEncoder.extendedFragments(of: whole, chunk: 100)
        #expect(fragments.count == 3)
        var decoder = HCIEventDecoder()
        var delivered: [OwnedAdvertisingReport] = []
        for (index, fragment) in fragments.enumerated() {
            delivered += decodeEvent(try HCIEventEncoder.extendedAdvertisingReport([fragment]), with: &decoder).reports
            if index == 0 {
                // A report from another SID in between is delivered on its own.
                delivered += decodeEvent(try HCIEventEncoder.extendedAdvertisingReport([other]), with: &decoder).reports
            }
        }
        #expect(delivered.count == 2)
        #expect(delivered.first?.data == other.data)
        #expect(delivered.last?.data == whole.data)
        #expect(delivered.last?.isTruncated == false)
        #expect(decoder.counters.fragmentsHeld == 2)
        #expect(decoder.counters.reportsReassembled == 1)
        delivered.last?.withReport { report in
            guard case .signal(let signal) = GeoRacingDecoder().decode(report.data) else {
                Issue.record("the joined data must hold the GeoRacing frame")
                return
            }
            #expect(signal.zone == 8)
        }
    }

    @Test func truncatedStatusIsDeliveredMarked() throws {
        var report = OwnedAdvertisingReport(
            origin: .extendedReport, kind: .extended, properties: [], address: sampleAddress, rssi: -70,
            data: [UInt8](repeating: 1, count: 150))
        report.isTruncated = true
        var decoder = HCIEventDecoder()
        let delivered = try Self.deliver(HCIEventEncoder.extendedFragments(of: report, chunk: 100), to: &decoder)
        Self.expectOneTruncatedReport(delivered, holding: 150)
        #expect(decoder.counters.truncatedReports == 1)
    }

    @Test func pendingChainsAreBoundedAndOldestIsDropped() throws {
        var decoder = HCIEventDecoder(maxPendingChains: 4)
        for index in 0..<10 {
            let fragment = OwnedAdvertisingReport(
                origin: .extendedReport, kind: .extended,
                properties: ExtendedEventProperties(rawValue: 1 << 5),
                address: BluetoothAddress(rawValue: UInt64(index)),
                rssi: -70, sid: 1, data: [1, 2, 3])
            let (reports, _) = decodeEvent(try HCIEventEncoder.extendedAdvertisingReport([fragment]), with: &decoder)
            #expect(reports.isEmpty)
        }
        #expect(decoder.counters.fragmentChainsDropped == 6)
        // The newest chain is still there and completes.
        let last = OwnedAdvertisingReport(
            origin: .extendedReport, kind: .extended, properties: [], address: BluetoothAddress(rawValue: 9), rssi: -70,
            sid: 1, data: [4])
        let (reports, _) = decodeEvent(try HCIEventEncoder.extendedAdvertisingReport([last]), with: &decoder)
        #expect(reports.first?.data == [1, 2, 3, 4])
    }

    /// The reassembler owns a buffer; a copy of the decoder must not share its pending chains.
    @Test func copiesOfADecoderReassembleIndependently() throws {
        func fragment(_ data: [UInt8], more: Bool) -> OwnedAdvertisingReport {
            OwnedAdvertisingReport(
                origin: .extendedReport, kind: .extended,
                properties: ExtendedEventProperties(rawValue: more ? 1 << 5 : 0),
                address: sampleAddress, rssi: -70, sid: 2, data: data)
        }
        var original = HCIEventDecoder()
        _ = decodeEvent(try HCIEventEncoder.extendedAdvertisingReport([fragment([1, 2], more: true)]), with: &original)
        var copy = original
        _ = decodeEvent(try HCIEventEncoder.extendedAdvertisingReport([fragment([9, 9], more: true)]), with: &copy)
        let fromCopy = decodeEvent(
            try HCIEventEncoder.extendedAdvertisingReport([fragment([3], more: false)]),
            with: &copy
        ).reports
        let fromOriginal = decodeEvent(
            try HCIEventEncoder.extendedAdvertisingReport([fragment([4], more: false)]),
            with: &original
        ).reports
        #expect(fromCopy.first?.data == [1, 2, 9, 9, 3])
        #expect(fromOriginal.first?.data == [1, 2, 4])
        #expect(original.counters.fragmentsHeld == 1)
        #expect(copy.counters.fragmentsHeld == 2)
    }

    @Test func chainsOverflowing1650BytesAreDeliveredTruncated() throws {
        var decoder = HCIEventDecoder()
        let fragment = OwnedAdvertisingReport(
            origin: .extendedReport, kind: .extended, properties: ExtendedEventProperties(rawValue: 1 << 5),
            address: sampleAddress, rssi: -70, sid: 0, data: [UInt8](repeating: 7, count: 200))
        let delivered = try Self.deliver(Array(repeating: fragment, count: 9), to: &decoder)
        Self.expectOneTruncatedReport(delivered, holding: 200)
        #expect(decoder.counters.fragmentChainsDropped == 1)
    }

    @Test func decodesDirectedReport() throws {
        let report = OwnedAdvertisingReport(
            origin: .directedReport, kind: .advDirectInd, addressType: .randomDevice, address: sampleAddress,
            directAddress: BluetoothAddress(rawValue: 0x11_22_33_44_55_66), rssi: -58, data: [])
        let event = try HCIEventEncoder.directedAdvertisingReport([report])
        #expect(event.count == 2 + 2 + 16)
        let (reports, outcome) = decodeEvent(event)
        #expect(outcome == .advertising(reports: 1))
        #expect(reports == [report])
    }

    @Test func legacyEncodeDecodeRoundTrips() async {
        let kinds = Gen.element(of: AdvertisingPDUKind.allCases.filter { $0 != .extended })
        await propertyCheck(
            count: 300, input: kinds, Gen.uint64(), Gen.int8(), Gen.uint8().array(of: 0...31), Gen.int(in: 1...3)
        ) {
            kind, address, rssi, data, copies in
            guard let kind else { return }
            let report = OwnedAdvertisingReport(
                kind: kind, addressType: .randomDevice, address: BluetoothAddress(rawValue: address),
                rssi: rssi == 127 ? nil : rssi, data: data)
            let event = try HCIEventEncoder.advertisingReport(Array(repeating: report, count: copies))
            let (reports, outcome) = decodeEvent(event)
            #expect(outcome == .advertising(reports: copies))
            #expect(reports == Array(repeating: report, count: copies))
        }
    }

    @Test func extendedEncodeDecodeRoundTrips() async {
        await propertyCheck(
            count: 300, input: Gen.uint16(in: 0...0x1F), Gen.uint64(), Gen.int8(), Gen.int8(),
            Gen.uint8().array(of: 0...229)
        ) {
            properties, address, rssi, txPower, data in
            let props = ExtendedEventProperties(rawValue: properties)
            let report = OwnedAdvertisingReport(
                origin: .extendedReport, kind: props.legacyKind ?? (props.contains(.legacy) ? .advInd : .extended),
                properties: props, addressType: .publicIdentity, address: BluetoothAddress(rawValue: address),
                directAddress: props.contains(.directed) ? BluetoothAddress(rawValue: 0xAABBCCDDEEFF) : nil,
                rssi: rssi == 127 ? nil : rssi, txPower: txPower == 127 ? nil : txPower, sid: 4, data: data)
            guard props.contains(.legacy) == false || props.legacyKind != nil else { return }
            let (reports, outcome) = decodeEvent(try HCIEventEncoder.extendedAdvertisingReport([report]))
            #expect(outcome == .advertising(reports: 1))
            #expect(reports == [report])
        }
    }

    @Test func randomEventsNeverTrap() async {
        await propertyCheck(count: 2000, input: Gen.uint8(in: 0...0x0F), Gen.uint8().array(of: 0...80)) {
            subevent, tail in
            let body = [[0x02, 0x0B, 0x0D][Int(subevent) % 3]] + tail
            let event = [0x3E, UInt8(body.count)] + body
            var decoder = HCIEventDecoder()
            let (reports, outcome) = decodeEvent(event, with: &decoder)
            switch outcome {
            case .advertising(let count): #expect(count == reports.count)
            case .malformed: #expect(decoder.counters.malformedEvents == 1)
            case .skipped: Issue.record("LE advertising subevents are never skipped")
            }
        }
    }
}
