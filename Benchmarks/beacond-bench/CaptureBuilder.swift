import BLEPayload
import Foundation

/// Builds the benchmark capture: the advertising reports of the real HCI captures,
/// re-encoded one report per LE Meta event into a btsnoop 1002 (H4) file, repeated
/// with increasing timestamps until it holds the requested number of reports.
struct CaptureBuilder {
    struct Built {
        var bytes: [UInt8]
        /// Reports written (each one HCI event, one btsnoop record).
        var reports: Int
        var legacy: Int
        var extended: Int
        var geoRacing: Int
        /// Distinct reports the capture cycles through.
        var baseSet: Int
        /// Where the base set came from, for the summary.
        var source: String
    }

    /// Reads every capture in `folder` and keeps its HCI advertising reports
    /// (legacy and extended; link-layer sniffer PDUs are not HCI and are left out).
    /// The same capture in another container (a .log and its .pcap) adds nothing: a report
    /// already seen with the same time, address, RSSI and data is kept once.
    static func realReports(in folder: String) -> (reports: [OwnedAdvertisingReport], files: [String])? {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory), isDirectory.boolValue,
            let names = try? FileManager.default.contentsOfDirectory(atPath: folder)
        else { return nil }
        var reports: [OwnedAdvertisingReport] = []
        var seen = Set<OwnedAdvertisingReport>()
        var used: [String] = []
        for name in names.sorted() {
            let path = folder + "/" + name
            var entryIsDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &entryIsDirectory),
                !entryIsDirectory.boolValue
            else { continue }
            let reader: CaptureReader
            do { reader = try CaptureReader(path: path) } catch {
                warn("skipping \(name): \(error)")
                continue
            }
            var extractor = AdvertisingExtractor()
            var found = 0
            do {
                while let packet = try reader.next() {
                    extractor.process(packet) { report in
                        switch report.origin {
                        case .legacyReport, .extendedReport:
                            var owned = report.owned()
                            owned.controller = nil
                            found += 1
                            if seen.insert(owned).inserted { reports.append(owned) }
                        case .directedReport, .linkLayer, .bluezDevice:
                            break
                        }
                    }
                }
            } catch {
                warn("\(name): stopped at \(error)")
            }
            if found > 0 { used.append("\(name) (\(found))") }
        }
        return reports.isEmpty ? nil : (reports, used)
    }

    /// A varied set of reports made with the encoder's own types, for when no real captures are at hand.
    static func syntheticReports(count: Int = 1_000) -> [OwnedAdvertisingReport] {
        var generator = SplitMix64(seed: 0xBEAC_0D)
        var reports: [OwnedAdvertisingReport] = []
        reports.reserveCapacity(count)
        let kinds: [AdvertisingPDUKind] = [.advInd, .advNonconnInd, .advScanInd, .scanRsp]
        for index in 0..<count {
            let address = BluetoothAddress(rawValue: generator.next())
            let rssi = Int8(truncatingIfNeeded: -30 - Int(generator.next() % 70))
            var data = AdvertisingDataBuilder()
            switch index % 4 {
            case 0: // iBeacon
                data.appendFlags(0x06)
                var payload: [UInt8] = [0x02, 0x15]
                for _ in 0..<21 { payload.append(UInt8(truncatingIfNeeded: generator.next())) }
                data.appendManufacturerData(companyID: 0x004C, payload: payload)
            case 1: // name and TX power
                data.appendFlags(0x1A)
                data.appendTXPowerLevel(-8)
                data.appendLocalName("sensor-\(index)")
            case 2: // other manufacturer data
                var payload: [UInt8] = []
                for _ in 0..<Int(generator.next() % 20) { payload.append(UInt8(truncatingIfNeeded: generator.next())) }
                data.appendManufacturerData(companyID: UInt16(truncatingIfNeeded: generator.next()), payload: payload)
            default: // extended, longer data
                data.appendFlags(0x06)
                var payload: [UInt8] = []
                for _ in 0..<(40 + Int(generator.next() % 150)) {
                    payload.append(UInt8(truncatingIfNeeded: generator.next()))
                }
                data.append(type: 0x16, data: payload)
            }
            if index % 4 == 3 {
                reports.append(
                    OwnedAdvertisingReport(
                        origin: .extendedReport, kind: .extended, properties: ExtendedEventProperties(rawValue: 0x01),
                        addressType: .randomDevice, address: address, rssi: rssi, txPower: 4,
                        sid: UInt8(index % 16), data: data.bytes))
            } else {
                reports.append(
                    OwnedAdvertisingReport(
                        origin: .legacyReport, kind: kinds[index % kinds.count], addressType: .randomDevice,
                        address: address, rssi: rssi, data: data.bytes))
            }
        }
        return reports
    }

    /// One H4 event carrying `report`, encoded by beacond's encoder.
    static func event(for report: OwnedAdvertisingReport) throws -> [UInt8] {
        switch report.origin {
        case .legacyReport, .directedReport, .linkLayer, .bluezDevice:
            return HCIEventEncoder.h4(try HCIEventEncoder.advertisingReport([report]))
        case .extendedReport:
            return HCIEventEncoder.h4(try HCIEventEncoder.extendedAdvertisingReport([report]))
        }
    }

    /// Makes `report` encodable as one complete event: extended data fits 229 bytes,
    /// and a report the controller left "incomplete, more to come" is marked truncated instead,
    /// so the decoder delivers exactly one report per event.
    static func normalized(_ report: OwnedAdvertisingReport) -> OwnedAdvertisingReport {
        var report = report
        switch report.origin {
        case .extendedReport:
            if report.data.count > 229 {
                report.data = Array(report.data.prefix(229))
                report.isTruncated = true
            }
            var status = (report.properties.rawValue >> 5) & 0x3
            if status == 1 || (report.isTruncated && status == 0) { status = 2 }
            report.properties = ExtendedEventProperties(rawValue: report.properties.rawValue & ~0x60 | status << 5)
        default:
            if report.data.count > 31 { report.data = Array(report.data.prefix(31)) }
        }
        return report
    }

    static func build(reports target: Int, geoEvery: Int, base: [OwnedAdvertisingReport], source: String) throws
        -> Built
    {
        let base = base.map(normalized)
        // Pre-encode the base set once; GeoRacing reports are encoded as they come.
        let encoded = try base.map(event(for:))
        var bytes = BTSnoopWriter.fileHeader(datalink: 1002)
        let averageRecord = encoded.reduce(0) { $0 + $1.count } / max(1, encoded.count) + 24
        bytes.reserveCapacity(16 + target * averageRecord + target / 4)
        let modes: [GeoRacingMode] = [.normal, .safetyCar, .redFlag, .evacuation]
        let start: Int64 = 1_767_225_600_000_000 // 2026-01-01T00:00:00Z, Unix µs
        var built = Built(
            bytes: [], reports: 0, legacy: 0, extended: 0, geoRacing: 0, baseSet: base.count, source: source)
        for index in 0..<target {
            let slot = index % base.count
            let timestamp = start + Int64(index) * 250
            let packet: [UInt8]
            if geoEvery > 0 && index % geoEvery == geoEvery - 1 {
                var report = base[slot]
                report.data = GeoRacingSignal.circuit(
                    zone: UInt16(index / geoEvery % 48 + 1), mode: modes[index / geoEvery % modes.count],
                    sequence: UInt16(truncatingIfNeeded: index / geoEvery), ttl: 10,
                    temperature: index % 3 == 0 ? UInt8(index % 40) : nil
                ).advertisingData()
                report.isTruncated = false
                report.properties = ExtendedEventProperties(rawValue: report.properties.rawValue & ~0x60)
                packet = try event(for: report)
                built.geoRacing += 1
            } else {
                packet = encoded[slot]
            }
            if base[slot].origin == .extendedReport { built.extended += 1 } else { built.legacy += 1 }
            BTSnoopWriter.appendRecord(to: &bytes, timestamp: timestamp, packet: packet)
        }
        built.reports = target
        built.bytes = bytes
        return built
    }
}

/// A small deterministic generator for the synthetic fallback.
struct SplitMix64 {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
