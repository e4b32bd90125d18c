import BLEPayload
import Testing

/// Inputs the libFuzzer targets (Fuzz/, docs/robustness.md "Fuzzing") found, kept as tests.
@Suite struct FuzzRegressionTests {
    /// `hci-encoder` and `hci-reassembly`: an extended report whose properties say "directed" but
    /// which carries no direct address was encoded with direct address type 0x00, and decoded with
    /// the direct address 00:00:00:00:00:00. The encoder now writes type 0xFF, the decoder's "none".
    /// The report is the fuzzer's minimized one (properties 0x5555: directed, truncated).
    static let directedWithoutAddress = OwnedAdvertisingReport(
        origin: .extendedReport, kind: .advDirectInd, properties: ExtendedEventProperties(rawValue: 0x5555),
        addressType: .reserved(0x55), address: BluetoothAddress(rawValue: 0x5555_5555_5555), directAddress: nil,
        rssi: 85, txPower: 102, sid: 101, isTruncated: true, data: [108, 116, 73, 85, 85, 58])

    @Test func directedExtendedReportWithoutDirectAddressRoundTrips() throws {
        let event = try HCIEventEncoder.extendedAdvertisingReport([Self.directedWithoutAddress])
        // [3E len 0D 01], then properties (2), address type, address (6), PHYs (2), SID, TX power,
        // RSSI, periodic interval (2): the direct address type is event byte 4 + 16.
        #expect(event[20] == 0xFF)
        let (reports, outcome) = decodeEvent(event)
        #expect(outcome == .advertising(reports: 1))
        #expect(reports == [Self.directedWithoutAddress])
    }

    @Test func undirectedExtendedReportKeepsDirectAddressTypeZero() throws {
        var report = Self.directedWithoutAddress
        report.properties = ExtendedEventProperties(rawValue: 0x0001)
        report.kind = .extended
        report.isTruncated = false
        let event = try HCIEventEncoder.extendedAdvertisingReport([report])
        #expect(event[20] == 0x00)
        #expect(decodeEvent(event).reports == [report])
    }

    /// `hci-reassembly`: the same report cut into fragments of the encoder's 229 bytes and of 1 to
    /// 229 bytes interleaved with another chain reassembles identically, directed or not.
    @Test func directedChainReassemblesWhateverTheFragments() throws {
        var report = Self.directedWithoutAddress
        report.properties = ExtendedEventProperties(rawValue: 0x0005)
        report.isTruncated = false
        report.kind = .extended
        report.data = (0..<700).map { UInt8(truncatingIfNeeded: $0 * 7) }
        var other = report
        other.address = BluetoothAddress(rawValue: 0x0102_0304_0506)
        other.sid = 2
        for chunk in [229, 100, 1] {
            var decoder = HCIEventDecoder()
            var received: [OwnedAdvertisingReport] = []
            let mine = HCIEventEncoder.extendedFragments(of: report, chunk: chunk)
            let theirs = HCIEventEncoder.extendedFragments(of: other, chunk: 229)
            for index in 0..<max(mine.count, theirs.count) {
                for fragment in [mine, theirs].compactMap({ index < $0.count ? $0[index] : nil }) {
                    let event = try HCIEventEncoder.extendedAdvertisingReport([fragment])
                    received += decodeEvent(event, with: &decoder).reports
                }
            }
            #expect(received.sorted { $0.address < $1.address } == [other, report], "chunk \(chunk)")
        }
    }
}
