// Target `hci-reassembly`: differential fuzzing of extended-report reassembly. The input picks up
// to 8 reports (one chain each, up to the reassembler's 1650 bytes), how each is cut into
// fragments (any sizes from 1 to 229 bytes), how the chains interleave and how fragments share
// events. Whatever the boundaries, the decoder must deliver exactly the reports it was given, each
// once, whole and not truncated: the same as from the encoder's own 229-byte fragments, one chain
// after another.
import BLEPayload

private func fragments(of report: OwnedAdvertisingReport, sizes: inout FuzzInput) -> [OwnedAdvertisingReport] {
    var pieces: [OwnedAdvertisingReport] = []
    var start = 0
    repeat {
        let size = sizes.isAtEnd ? 229 : 1 + Int(sizes.u8()) % 229
        let end = min(report.data.count, start + size)
        var piece = report
        piece.data = Array(report.data[start..<end])
        let status: UInt16 = end < report.data.count ? 1 : 0
        piece.properties = ExtendedEventProperties(rawValue: report.properties.rawValue & ~0x60 | status << 5)
        pieces.append(piece)
        start = end
    } while start < report.data.count
    return pieces
}

/// Packs fragments into LE Extended Advertising Report events: a new event when the input says
/// so or when the next fragment would not fit (25 reports, 255 parameter bytes).
private func events(_ fragments: [OwnedAdvertisingReport], packing: inout FuzzInput) -> [[UInt8]] {
    var events: [[UInt8]] = []
    var pending: [OwnedAdvertisingReport] = []
    var parameters = 2 // subevent code and report count; each report adds 24 bytes and its data
    for fragment in fragments {
        let fits = pending.count < 25 && parameters + 24 + fragment.data.count <= 255
        if !pending.isEmpty, packing.bool() || !fits {
            events.append(try! HCIEventEncoder.extendedAdvertisingReport(pending))
            pending = []
            parameters = 2
        }
        pending.append(fragment)
        parameters += 24 + fragment.data.count
    }
    if !pending.isEmpty { events.append(try! HCIEventEncoder.extendedAdvertisingReport(pending)) }
    return events
}

private func decodeAll(_ events: [[UInt8]]) -> [OwnedAdvertisingReport] {
    var decoder = HCIEventDecoder(maxPendingChains: 16)
    var reports: [OwnedAdvertisingReport] = []
    for event in events {
        let outcome = event.withUnsafeBytes { raw in
            decoder.decode(event: raw, timestamp: 0) { reports.append($0.owned()) }
        }
        guard case .advertising = outcome else {
            fuzzCheck(false, "an encoded event decodes as \(outcome)")
            return reports
        }
    }
    let counters = decoder.counters
    fuzzCheck(counters.fragmentChainsDropped == 0 && counters.truncatedReports == 0, "chains dropped: \(counters)")
    return reports
}

/// The first report that differs, with the data shown by its length.
private func mismatch(_ sent: [OwnedAdvertisingReport], _ received: [OwnedAdvertisingReport]) -> String {
    func short(_ report: OwnedAdvertisingReport) -> String {
        var copy = report
        copy.data = []
        return "\(copy) with \(report.data.count) data bytes"
    }
    guard sent.count == received.count else { return "\(sent.count) reports sent, \(received.count) received" }
    for (one, other) in zip(sent, received) where one != other {
        return "sent \(short(one)), received \(short(other))"
    }
    return "no difference"
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHCIReassembly(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var input = FuzzInput(data, size)
    let count = 1 + Int(input.u8()) % 8
    var originals: [OwnedAdvertisingReport] = []
    for index in 0..<count {
        let length = Int(input.u16()) % 1651
        let pattern = input.take(1 + Int(input.u8()) % 16)
        var bytes = [UInt8](repeating: UInt8(truncatingIfNeeded: index), count: length)
        for position in bytes.indices where !pattern.isEmpty { bytes[position] &+= pattern[position % pattern.count] }
        originals.append(
            OwnedAdvertisingReport(
                origin: .extendedReport, kind: .extended,
                properties: ExtendedEventProperties(rawValue: UInt16(input.u8() & 0x0F)),
                addressType: input.bool() ? .randomDevice : .publicDevice,
                address: BluetoothAddress(rawValue: 0xC0_0000_0000 | UInt64(index)),
                // An RSSI of 127 means "none" and decodes as nil: the generator never sends it.
                rssi: Int8(bitPattern: min(input.u8(), 126)), txPower: input.bool() ? -8 : nil, sid: UInt8(index),
                data: bytes))
    }
    // Each chain's fragments, then an interleaving that keeps every chain's own order.
    var sizes = input
    let chains = originals.map { fragments(of: $0, sizes: &sizes) }
    var sent = [Int](repeating: 0, count: chains.count)
    var schedule = sizes
    var interleaved: [OwnedAdvertisingReport] = []
    while let first = chains.indices.first(where: { sent[$0] < chains[$0].count }) {
        let pick = Int(schedule.u8()) % chains.count
        let chain = sent[pick] < chains[pick].count ? pick : first
        interleaved.append(chains[chain][sent[chain]])
        sent[chain] += 1
    }
    var packing = schedule
    let fuzzed = decodeAll(events(interleaved, packing: &packing))

    var plain = FuzzInput(UnsafeRawBufferPointer(start: nil, count: 0))
    let reference = decodeAll(
        events(originals.flatMap { HCIEventEncoder.extendedFragments(of: $0) }, packing: &plain))

    let byAddress = { (reports: [OwnedAdvertisingReport]) in reports.sorted { $0.address < $1.address } }
    fuzzCheck(byAddress(reference) == originals, "the encoder's own fragments: " + mismatch(originals, reference))
    fuzzCheck(byAddress(fuzzed) == originals, "fragments cut by the input: " + mismatch(originals, byAddress(fuzzed)))
    return 0
}

func fuzzSeeds(_ sources: SeedSources) -> [[UInt8]] {
    [
        [0], [1, 0x06, 0x72, 4, 1, 2, 3, 4, 0, 0, 1, 229, 229, 229, 0, 1, 0, 1],
        [7] + [UInt8](repeating: 0x33, count: 200), [2, 0x02, 0x00, 1, 0xAA, 0, 0, 0x02, 0x00, 2, 0xAB, 0xCD, 1, 1],
    ]
}
