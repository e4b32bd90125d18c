import BLEPayload
import BeacondTestSupport
import Foundation
import Testing

/// The shared captures this suite reads (with what Wireshark's dissector made of them,
/// expected/NAME.jsonl), and the notice when they are absent.
extension SharedCaptures {
    static let hciCaptures = [
        "phlash_blefun__btsnoop_hci.log",
        "csacca_horizon74__btsnoop_hci.log",
        "csacca_horizon74__btsnoop_hci.dlt201.pcap",
        "mauricelam_btsnoop_extcap__testdata_btsnoop_hci.log",
        "nick0451_dsp408__btsnoop_hci.log",
        "nick0451_dsp408__btsnoop_hci.pcapng",
        "darkmentorllc_Blue2thprinting__import.snoop",
        "darkmentorllc_Blue2thprinting__import.dlt254.pcap",
        "madkaye_revcar__btsnoop_hci.log",
    ]

    static let linkLayerCaptures = [
        "AleBonora3_TesiBLE__garmin.pcapng",
        "blakete_BostonMesh__take3_adv38_2.pcap",
    ]

    static let skipNotice: Comment = "../shared/captures is absent: conformance against Wireshark's reading is skipped"
}

/// The fields Wireshark's expected files hold, for one report.
struct ExpectedReport: Equatable, CustomStringConvertible {
    var micros: Int64
    var address: String
    var rssi: Int?
    var txPower: Int?
    var manufacturerData: [String]

    init(json: [String: Any]) throws {
        guard let ts = json["ts"] as? Double, let address = json["addr"] as? String,
            let mfr = json["mfr"] as? [[String: Any]]
        else { throw ExpectedFileError.badLine(String(describing: json)) }
        micros = Int64((ts * 1_000_000).rounded())
        self.address = address
        rssi = json["rssi"] as? Int
        txPower = json["tx_power"] as? Int
        manufacturerData = try mfr.map { entry in
            guard let company = entry["company"] as? Int, let data = entry["data"] as? String else {
                throw ExpectedFileError.badLine(String(describing: entry))
            }
            return "\(company):\(data)"
        }
    }

    init(_ report: OwnedAdvertisingReport) {
        micros = report.timestamp
        address = report.address.description
        rssi = report.rssi.map(Int.init)
        txPower = report.txPower.map(Int.init)
        manufacturerData = report.withReport { report in
            report.data.manufacturerData.map { entry in
                "\(entry.companyID):" + entry.payload.map { String(format: "%02x", $0) }.joined()
            }
        }
    }

    var description: String {
        "\(micros) \(address) rssi \(String(describing: rssi)) tx \(String(describing: txPower)) \(manufacturerData)"
    }
}

enum ExpectedFileError: Error {
    case badLine(String)
}

func loadExpected(_ name: String) throws -> [ExpectedReport] {
    let url = SharedCaptures.directory.appendingPathComponent("expected/\(name).jsonl")
    let text = try String(contentsOf: url, encoding: .utf8)
    return try text.split(separator: "\n").map { line in
        guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
            throw ExpectedFileError.badLine(String(line))
        }
        return try ExpectedReport(json: object)
    }
}

func readShared(_ name: String, deliversBadCRC: Bool = false) throws -> [OwnedAdvertisingReport] {
    let reader = try CaptureReader(path: SharedCaptures.directory.appendingPathComponent(name).path)
    var extractor = AdvertisingExtractor(deliversBadCRC: deliversBadCRC)
    var reports: [OwnedAdvertisingReport] = []
    while let packet = try reader.next() {
        extractor.process(packet) { reports.append($0.owned()) }
    }
    return reports
}

@Suite(.enabled(if: SharedCaptures.available, SharedCaptures.skipNotice))
struct ConformanceTests {
    @Test(arguments: SharedCaptures.hciCaptures)
    func hciCaptureMatchesWiresharkReportForReport(name: String) throws {
        let expected = try loadExpected(name)
        let decoded = try readShared(name).map(ExpectedReport.init)
        #expect(decoded.count == expected.count)
        for (index, (got, want)) in zip(decoded, expected).enumerated() where got != want {
            Issue.record("\(name) report \(index): got \(got), Wireshark read \(want)")
            break
        }
    }

    /// Sniffer captures: beacond drops every PDU whose CRC fails, computing the CRC when the
    /// sniffer did not. Wireshark 4.0 lists some bad-CRC PDUs, because its dissector stops at
    /// malformed data before it checks the CRC. So: every report beacond keeps matches
    /// Wireshark's, in order, and every report Wireshark has that beacond dropped comes from a
    /// packet whose CRC failed.
    @Test(arguments: SharedCaptures.linkLayerCaptures)
    func snifferCaptureMatchesWiresharkExceptBadCRC(name: String) throws {
        let expected = try loadExpected(name)
        let reader = try CaptureReader(path: SharedCaptures.directory.appendingPathComponent(name).path)
        var extractor = AdvertisingExtractor()
        var kept: [ExpectedReport] = []
        var badCRCTimes = Set<Int64>()
        while let packet = try reader.next() {
            let before = extractor.counters.linkLayerBadCRC
            extractor.process(packet) { kept.append(ExpectedReport($0.owned())) }
            if extractor.counters.linkLayerBadCRC > before { badCRCTimes.insert(packet.timestamp) }
        }
        var next = 0
        var droppedForCRC = 0
        for (index, want) in expected.enumerated() {
            if next < kept.count && kept[next] == want {
                next += 1
            } else if badCRCTimes.contains(want.micros) {
                droppedForCRC += 1
            } else {
                Issue.record(
                    """
                    \(name) report \(index): Wireshark read \(want); beacond's next is \
                    \(next < kept.count ? kept[next].description : "nothing")
                    """
                )
                return
            }
        }
        #expect(next == kept.count, "every report beacond keeps is one Wireshark lists")
        #expect(kept.count + droppedForCRC == expected.count)
        #expect(extractor.counters.linkLayerBadCRC >= droppedForCRC)
    }

    @Test func madkayeCaptureHasNoAdvertising() throws {
        #expect(try readShared("madkaye_revcar__btsnoop_hci.log").isEmpty)
    }

    @Test func samePacketsInDifferentContainersDecodeAlike() throws {
        #expect(
            try readShared("csacca_horizon74__btsnoop_hci.log")
                == readShared("csacca_horizon74__btsnoop_hci.dlt201.pcap"))
        #expect(try readShared("nick0451_dsp408__btsnoop_hci.log") == readShared("nick0451_dsp408__btsnoop_hci.pcapng"))
        let monitor = try readShared("darkmentorllc_Blue2thprinting__import.snoop")
        #expect(monitor == (try readShared("darkmentorllc_Blue2thprinting__import.dlt254.pcap")))
        #expect(monitor.allSatisfy { $0.controller != nil })
    }
}
