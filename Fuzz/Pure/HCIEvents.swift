// Target `hci-events`: HCI events of any bytes, one decoder across calls. The input is cut into
// events by their own length bytes (`[code][length][parameters]`, the last one as it is), so
// extended-report fragments meet again in later calls. Properties:
// - the outcome counts the reports delivered, and every report's data is bounded;
// - a copy of the decoder taken mid-stream and fed the same rest delivers the same reports
//   (its reassembly state is copied on write, never shared);
// - decode(encode(decode(event))) == decode(event) for every complete, whole legacy, directed
//   or extended report.
import BLEPayload

private func events(of bytes: UnsafeRawBufferPointer) -> [UnsafeRawBufferPointer] {
    var events: [UnsafeRawBufferPointer] = []
    var offset = 0
    while offset < bytes.count {
        let end = offset + 1 < bytes.count ? min(bytes.count, offset + 2 + Int(bytes[offset + 1])) : bytes.count
        events.append(UnsafeRawBufferPointer(rebasing: bytes[offset..<end]))
        offset = end
    }
    return events
}

private func decode(
    _ decoder: inout HCIEventDecoder, _ event: UnsafeRawBufferPointer, at time: Int64
) -> (HCIEventDecoder.Outcome, [OwnedAdvertisingReport]) {
    var reports: [OwnedAdvertisingReport] = []
    let outcome = decoder.decode(event: event, timestamp: time, controller: 1) { report in
        fuzzCheck(report.data.bytes.count <= 1650, "a report of \(report.data.bytes.count) data bytes")
        reports.append(report.owned())
    }
    if case .advertising(let count) = outcome {
        fuzzCheck(count == reports.count, "outcome says \(count) reports, \(reports.count) delivered")
    }
    return (outcome, reports)
}

/// Re-encodes one decoded report the way it came, when the encoder can say it the same way.
private func reencoded(_ report: OwnedAdvertisingReport) -> [UInt8]? {
    switch report.origin {
    case .legacyReport:
        return try? HCIEventEncoder.advertisingReport([report])
    case .directedReport:
        return try? HCIEventEncoder.directedAdvertisingReport([report])
    case .extendedReport:
        return try? HCIEventEncoder.extendedAdvertisingReport([report])
    default:
        return nil
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHCIEvents(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = FuzzInput(data, size)
    let all = events(of: input.bytes)
    var decoder = HCIEventDecoder(maxPendingChains: 4)
    var copy: HCIEventDecoder?
    let split = all.count / 2
    for (index, event) in all.enumerated() {
        if index == split { copy = decoder }
        let time = Int64(index)
        let (outcome, reports) = decode(&decoder, event, at: time)
        if var other = copy {
            let (otherOutcome, otherReports) = decode(&other, event, at: time)
            copy = other
            fuzzCheck(otherOutcome == outcome && otherReports == reports, "a decoder copy diverged at event \(index)")
        }
        guard case .advertising = outcome else { continue }
        for report in reports where report.data.count <= 229 && report.properties.dataStatus == 0 {
            guard let encoded = reencoded(report) else { continue }
            var fresh = HCIEventDecoder()
            let again = encoded.withUnsafeBytes { decode(&fresh, $0, at: time).1 }
            fuzzCheck(again == [report], "\(report) re-encodes to \(encoded), which decodes to \(again)")
        }
    }
    let counters = decoder.counters
    fuzzCheck(counters.events == all.count, "\(counters.events) events counted, \(all.count) decoded")
    fuzzCheck(
        counters.advertisingEvents + counters.skippedEvents + counters.malformedEvents == counters.events,
        "event outcomes do not add up: \(counters)")
    return 0
}

func fuzzSeeds(_ sources: SeedSources) -> [[UInt8]] {
    var seeds: [[UInt8]] = []
    let signal = GeoRacingSignal.circuit(zone: 3, mode: .redFlag, sequence: 8, ttl: 20)
    let legacy = OwnedAdvertisingReport(
        timestamp: 0, kind: .advNonconnInd, addressType: .randomDevice,
        address: BluetoothAddress(rawValue: 0xC0FF_EE00_1122), rssi: -60, data: signal.advertisingData())
    var extended = legacy
    extended.origin = .extendedReport
    extended.kind = .extended
    extended.properties = ExtendedEventProperties(rawValue: 0)
    extended.sid = 3
    extended.data = Array(repeating: 0xAB, count: 300)
    var chain: [UInt8] = []
    for fragment in HCIEventEncoder.extendedFragments(of: extended, chunk: 100) {
        if let event = try? HCIEventEncoder.extendedAdvertisingReport([fragment]) { chain += event }
    }
    seeds.append(chain)
    if let event = try? HCIEventEncoder.advertisingReport([legacy, legacy]) { seeds.append(event) }
    if let event = try? HCIEventEncoder.directedAdvertisingReport([legacy]) { seeds.append(event) }
    for record in sources.records.prefix(20_000) {
        switch record.linkType {
        case .h4 where record.bytes.first == 0x04: seeds.append(Array(record.bytes.dropFirst()))
        case .hciUnencapsulated where record.flags & 3 == 3: seeds.append(record.bytes)
        default: continue
        }
    }
    // Short runs of consecutive events, so chains that span events are in the corpus from the start.
    let singles = seeds.filter { $0.first == HCIEventCode.leMeta }
    for start in stride(from: 0, to: singles.count, by: 4) {
        seeds.append(singles[start..<min(start + 4, singles.count)].flatMap { $0 })
    }
    return Array(seeds.prefix(600))
}
