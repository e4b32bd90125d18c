import BLEPayload
import BeacondTestSupport
import Foundation
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// The byte-level report output (issue 15) prints exactly what the String-based formatter before
/// it printed (`LegacyReportFormatter`, the oracle), for real captures and for reports built to
/// reach every branch: JSON lines and table rows, through `ReportPrinter` and `OutputStream`.
@Suite struct ReportOutputTests {
    static let formatter = ReportFormatter(decoder: GeoRacingDecoder())
    static let legacy = LegacyReportFormatter(decoder: GeoRacingDecoder())

    /// What `ReportPrinter` writes (through a file) for `reports`, and what the oracle makes of them.
    static func printed(json: Bool, all: Bool = true, _ feed: ((AdvertisingReport) -> Void) -> Void) throws
        -> (new: [UInt8], old: [UInt8])
    {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("report-output-\(UUID()).txt").path
        let fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0o600)
        try #require(fd >= 0)
        defer { unlink(path) }
        // A small buffer limit, so lines straddle many flushes.
        var printer = ReportPrinter(
            formatter: formatter, all: all, json: json, output: OutputStream(fd: fd, bufferLimit: 1000))
        var expected: [UInt8] = []
        var headerPrinted = false
        feed { report in
            printer.print(report)
            let match = legacy.decoder.decode(report.data)
            if !all, case .none = match { return }
            if !all, case .rejected = match { return }
            if json {
                var writer = LegacyJSONWriter(capacity: 1024)
                legacy.json(report, match: match, into: &writer)
                writer.newline()
                expected += writer.bytes
            } else {
                if !headerPrinted {
                    expected += Array((LegacyReportFormatter.tableHeader + "\n").utf8)
                    headerPrinted = true
                }
                expected += Array((legacy.row(report, match: match) + "\n").utf8)
            }
        }
        printer.output.flush()
        close(fd)
        let written = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        return (written, expected)
    }

    static func sharedCaptures() -> [String] {
        let folder = SharedCaptures.directory
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.filter { !$0.hasSuffix(".jsonl") && $0 != "expected" }.sorted()
            .map { folder.appendingPathComponent($0).path }
    }

    static var sharedCapturesAvailable: Bool { !sharedCaptures().isEmpty }

    @Test(.enabled(if: sharedCapturesAvailable, "../shared/captures is absent: skipping real captures"))
    func realCapturesPrintByteForByteWhatTheyPrintedBefore() throws {
        var reports = 0
        for json in [true, false] {
            for all in [true, false] {
                let (new, old) = try Self.printed(json: json, all: all) { body in
                    for path in Self.sharedCaptures() {
                        guard let reader = try? CaptureReader(path: path) else { continue }
                        var extractor = AdvertisingExtractor()
                        while let packet = try? reader.next() {
                            _ = extractor.process(packet) { report in
                                reports += 1
                                body(report)
                            }
                        }
                    }
                }
                #expect(new == old, "json \(json), all \(all): \(Self.firstDifference(new, old))")
            }
        }
        #expect(reports > 1000)
    }

    @Test func everyBranchOfAReportPrintsWhatItPrintedBefore() throws {
        for json in [true, false] {
            let (new, old) = try Self.printed(json: json) { body in
                for report in SyntheticReports.all() { report.withReport(body) }
            }
            #expect(new == old, "json \(json): \(Self.firstDifference(new, old))")
            #expect(new.count > 10_000)
        }
    }

    /// The bound a report's line is reserved with holds even for the worst AD: a name of controls
    /// (6 bytes out per byte in) and manufacturer entries with no payload.
    @Test func theLineBoundHoldsForTheWorstAdvertisingData() throws {
        for report in SyntheticReports.all() + SyntheticReports.worstCases() {
            try report.withReport { report in
                var json: [UInt8] = []
                var row: [UInt8] = []
                let match = Self.formatter.decoder.decode(report.data)
                Self.formatter.json(report, match: match, into: &json)
                Self.formatter.row(report, match: match, into: &row)
                let bound = ReportFormatter.lineBound(report)
                try #require(json.count + 1 <= bound, "json \(json.count) bytes, bound \(bound)")
                try #require(row.count + 1 <= bound, "row \(row.count) bytes, bound \(bound)")
            }
        }
    }

    @Test func theWorstCasesPrintWhatTheyPrintedBefore() throws {
        for json in [true, false] {
            let (new, old) = try Self.printed(json: json) { body in
                for report in SyntheticReports.worstCases() { report.withReport(body) }
            }
            #expect(new == old, "json \(json): \(Self.firstDifference(new, old))")
        }
    }

    /// The names written as literals are the names BLEPayload gives.
    @Test func literalNamesAreBLEPayloadsNames() {
        var types: [AddressType] = [.publicDevice, .randomDevice, .publicIdentity, .randomIdentity, .anonymous]
        types += [0, 4, 99, 200, 254].map { AddressType.reserved($0) }
        for type in types {
            var bytes: [UInt8] = []
            ReportFormatter.appendName(type, into: &bytes)
            #expect(String(decoding: bytes, as: UTF8.self) == type.name)
        }
        for kind in AdvertisingPDUKind.allCases {
            var bytes: [UInt8] = []
            ReportFormatter.appendName(kind, into: &bytes)
            #expect(String(decoding: bytes, as: UTF8.self) == kind.name)
        }
        for raw in UInt8(0)...UInt8(255) {
            let signal = GeoRacingSignal.circuit(zone: 1, mode: GeoRacingMode(rawValue: raw), sequence: 1)
            var new: [UInt8] = []
            ReportFormatter.json(signal, into: &new)
            var old = LegacyJSONWriter()
            LegacyReportFormatter.json(signal, into: &old)
            #expect(new == old.bytes, "mode \(raw)")
            var row: [UInt8] = []
            ReportFormatter.describe(signal, into: &row)
            #expect(String(decoding: row, as: UTF8.self) == LegacyReportFormatter.describe(signal), "mode \(raw)")
        }
        #expect(ReportFormatter.tableHeader == LegacyReportFormatter.tableHeader)
    }

    static func firstDifference(_ new: [UInt8], _ old: [UInt8]) -> String {
        let index = zip(new.indices, zip(new, old)).first { $0.1.0 != $0.1.1 }?.0 ?? min(new.count, old.count)
        let context = { (bytes: [UInt8]) in
            String(decoding: bytes[max(0, index - 80)..<min(bytes.count, index + 80)], as: UTF8.self)
        }
        return "\(new.count) vs \(old.count) bytes; first difference at \(index):\n"
            + "new: \(context(new))\nold: \(context(old))"
    }
}

/// Reports that reach every field and branch of the output: every kind, address type, optional
/// field, GeoRacing match, property bit, and timestamps at the edges of time.
enum SyntheticReports {
    static func all() -> [OwnedAdvertisingReport] {
        var reports: [OwnedAdvertisingReport] = []
        let timestamps: [Int64] = [
            0, 1, -1, 999_999, -999_999, 1_000_000, -1_000_000, 1_612_150_079_789_053, 253_402_300_799_999_999,
            253_402_300_800_000_000, -62_167_219_200_000_001, -62_167_219_200_000_000, Int64.max, Int64.min,
            Int64.max - 1, Int64.min + 1,
        ]
        let addressTypes: [AddressType] = [
            .publicDevice, .randomDevice, .publicIdentity, .randomIdentity, .anonymous, .reserved(4), .reserved(254),
        ]
        let signals: [GeoRacingSignal] = [
            .circuit(zone: 3, mode: .redFlag, sequence: 42, ttl: 10, flags: 0x81, temperature: 0),
            .circuit(zone: 65535, mode: .unknown(200), sequence: 65535, ttl: 255, temperature: 255),
            .circuit(zone: 0, mode: .normal, sequence: 0, ttl: 0),
            .staff(sourceID: 4_294_967_295, zone: 7, mode: .evacuation, sequence: 9, ttl: 5),
            .staff(sourceID: 0, zone: 1, mode: .safetyCar, sequence: 1, ttl: 1),
            GeoRacingSignal(command: .evacuate), GeoRacingSignal(command: .normal), GeoRacingSignal(command: .danger),
        ]
        let geoRacing = GeoRacingSignal.defaultCompanyID
        var index = 0
        for kind in AdvertisingPDUKind.allCases {
            for addressType in addressTypes {
                for timestamp in timestamps {
                    index += 1
                    var data = AdvertisingDataBuilder()
                    switch index % 9 {
                    case 0:
                        data.appendFlags(0x06)
                        let signal = signals[index % signals.count]
                        data.appendManufacturerData(companyID: geoRacing, payload: signal.encoded())
                    case 1:
                        data.appendManufacturerData(companyID: geoRacing, payload: [1, 2, 3])
                    case 2:
                        data.appendManufacturerData(companyID: geoRacing, payload: [9, 0, 1])
                    case 3:
                        data.appendLocalName("sensor-\(index) \"quoted\" \\ tab\t é ✓ \u{2028}")
                        data.appendTXPowerLevel(-128)
                    case 4:
                        data.appendManufacturerData(companyID: 0x004C, payload: Array(0..<30))
                        data.appendManufacturerData(companyID: 0xFFFF, payload: [])
                        data.appendManufacturerData(companyID: 0, payload: Array(0..<12))
                    case 5:
                        data.append(type: 0x09, data: [0x41, 0xFF, 0xC0, 0x80, 0xED, 0xA0, 0x80, 0x42, 0xC2, 0x85])
                        data.appendTXPowerLevel(127)
                    case 6:
                        data.append(type: 0x08, data: Array("short\u{1B}[31m".utf8))
                    case 7:
                        let location: (latitude: Float, longitude: Float)? = index % 2 == 0 ? (41.57, 2.26) : nil
                        data.appendManufacturerData(
                            companyID: geoRacing, payload: GeoRacingUserBeacon.frame(uidHash: 7, location: location))
                    default:
                        break
                    }
                    reports.append(
                        OwnedAdvertisingReport(
                            timestamp: timestamp, controller: index % 3 == 0 ? UInt16(index % 2 == 0 ? 0 : 65535) : nil,
                            origin: kind == .extended ? .extendedReport : .legacyReport, kind: kind,
                            properties: kind == .extended ? ExtendedEventProperties(rawValue: UInt16(index % 32)) : nil,
                            addressType: addressType,
                            address: BluetoothAddress(rawValue: UInt64(index) &* 0x0123_4567_89AB),
                            directAddress: index % 4 == 0 ? BluetoothAddress(rawValue: 0xFFFF_FFFF_FFFF) : nil,
                            rssi: index % 5 == 0 ? nil : Int8(truncatingIfNeeded: index * 37),
                            txPower: index % 7 == 0 ? Int8(truncatingIfNeeded: index * 11) : nil,
                            sid: index % 6 == 0 ? UInt8(truncatingIfNeeded: index) : nil,
                            isTruncated: index % 8 == 0,
                            // Case 6 ends with a structure that overruns: malformed at its offset.
                            data: data.bytes + (index % 9 == 6 ? [0x05, 0xFF, 0x01] : [])))
                }
            }
        }
        return reports
    }

    /// AD that makes the longest lines per byte.
    static func worstCases() -> [OwnedAdvertisingReport] {
        let controls = [UInt8](repeating: 0x01, count: 253)
        var manyEntries: [UInt8] = []
        while manyEntries.count + 4 <= 1650 { manyEntries += [3, 0xFF, 0xFF, 0xFF] }
        var longest = [UInt8](repeating: 0x1F, count: 1650)
        longest[0] = 0xFF
        longest[1] = 0x09
        let datas: [[UInt8]] = [
            [254, 0x09] + controls, manyEntries, longest, [], [0xFF, 0xFF], [2, 0x0A], Array(repeating: 0, count: 300),
        ]
        return datas.map { data in
            OwnedAdvertisingReport(
                timestamp: Int64.min, controller: 65535, origin: .extendedReport, kind: .extended,
                properties: ExtendedEventProperties(rawValue: 0xFFFF), addressType: .reserved(255),
                address: BluetoothAddress(rawValue: 0xFFFF_FFFF_FFFF), directAddress: BluetoothAddress(rawValue: 0),
                rssi: -128, txPower: -128, sid: 255, isTruncated: true, data: data)
        }
    }
}
