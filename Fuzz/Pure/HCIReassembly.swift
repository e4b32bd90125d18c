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
        let size = 1 + Int(sizes.u8()) % 229
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
    for fragment in fragments {
        if !pending.isEmpty, packing.bool() || (try? HCIEventEncoder.extendedAdvertisingReport(pending + [fragment])) == nil {
            events.append(try! HCIEventEncoder.extendedAdvertisingReport(pending))
            pending = []
        }
        pending.append(fragment)
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
                rssi: Int8(bitPattern: input.u8()), txPower: input.bool() ? -8 : nil, sid: UInt8(index),
                data: bytes))
    }
    // Each chain's fragments, then an interleaving that keeps every chain's own order.
    var sizes = input
    var chains = originals.map { fragments(of: $0, sizes: &sizes) }
    var schedule = sizes
    var interleaved: [OwnedAdvertisingReport] = []
    while let first = chains.indices.first(where: { !chains[$0].isEmpty }) {
        let pick = Int(schedule.u8()) % chains.count
        let chain = chains[pick].isEmpty ? first : pick
        interleaved.append(chains[chain].removeFirst())
    }
    var packing = schedule
    let fuzzed = decodeAll(events(interleaved, packing: &packing))

    var plain = FuzzInput(UnsafeRawBufferPointer(start: nil, count: 0))
    let reference = decodeAll(
        events(originals.flatMap { HCIEventEncoder.extendedFragments(of: $0) }, packing: &plain))

    let byAddress = { (reports: [OwnedAdvertisingReport]) in reports.sorted { $0.address < $1.address } }
    fuzzCheck(byAddress(reference) == originals, "the encoder's own fragments reassemble to \(reference)")
    fuzzCheck(byAddress(fuzzed) == originals, "fragments of \(originals.map(\.data.count)) bytes came back as \(fuzzed.map(\.data.count))")
    return 0
}

func fuzzSeeds(_ sources: SeedSources) -> [[UInt8]] {
    [
        [0], [1, 0x06, 0x72, 4, 1, 2, 3, 4, 0, 0, 1, 229, 229, 229, 0, 1, 0, 1],
        [7] + [UInt8](repeating: 0x33, count: 200), [2, 0x02, 0x00, 1, 0xAA, 0, 0, 0x02, 0x00, 2, 0xAB, 0xCD, 1, 1],
    ]
}
