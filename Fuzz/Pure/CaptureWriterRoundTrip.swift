// Target `capture-writers`: read(write(x)) == x for the three capture writers. The input picks the
// format (btsnoop 1001/1002/2001; pcap in either byte order, µs or ns; pcapng with any if_tsresol)
// and up to 8 records with any timestamp, flags and bytes. CaptureReader must give back every
// record: the bytes and flags as written, the time as the format holds it (pcap: seconds modulo
// 2^32; pcapng: the ticks in the interface's unit, rounded down), or refuse an unrepresentable time
// at that record with `timestampOutOfRange`, having returned every record before it.
import BLEPayload

private struct Written {
    var timestamp: Int64? // nil: the reader must refuse this record's time
    var flags: UInt32
    var packet: [UInt8]
}

/// pcapng ticks in 10^-p or 2^-p s to µs, rounded down; nil beyond Int64.
private func pcapngMicros(_ ticks: UInt64, tsresol: UInt8?) -> Int64? {
    let power = Int((tsresol ?? 6) & 0x7F)
    let micros: UInt128
    if let tsresol, tsresol & 0x80 != 0 {
        micros = power >= 128 ? 0 : (UInt128(ticks) * 1_000_000) >> UInt128(power)
    } else if power <= 6 {
        var scale: UInt128 = 1
        for _ in 0..<(6 - power) { scale *= 10 }
        micros = UInt128(ticks) * scale
    } else {
        var divisor: UInt128 = 1
        for _ in 0..<(power - 6) {
            guard divisor <= UInt128.max / 10 else { divisor = 0; break }
            divisor *= 10
        }
        micros = divisor == 0 ? 0 : UInt128(ticks) / divisor
    }
    return micros <= UInt128(Int64.max) ? Int64(micros) : nil
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCaptureWriters(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var input = FuzzInput(data, size)
    let format = input.u8() % 3
    let count = 1 + Int(input.u8()) % 8
    var bytes: [UInt8]
    var written: [Written] = []
    switch format {
    case 0:
        let datalink: UInt32 = [1001, 1002, 2001][Int(input.u8()) % 3]
        bytes = BTSnoopWriter.fileHeader(datalink: datalink)
        for _ in 0..<count {
            let timestamp = input.i64()
            let flags = input.u32()
            let packet = input.take(Int(input.u8()))
            BTSnoopWriter.appendRecord(to: &bytes, timestamp: timestamp, flags: flags, packet: packet)
            written.append(
                Written(
                    timestamp: timestamp <= BTSnoopWriter.latestTimestamp ? timestamp : nil, flags: flags,
                    packet: packet))
        }
    case 1:
        let linkType: UInt32 = [187, 201, 254, 256, 272][Int(input.u8()) % 5]
        let nanoseconds = input.bool()
        let bigEndian = input.bool()
        bytes = PcapWriter.fileHeader(linkType: linkType, nanoseconds: nanoseconds, bigEndian: bigEndian)
        for _ in 0..<count {
            let timestamp = input.i64()
            let packet = input.take(Int(input.u8()))
            PcapWriter.appendRecord(
                to: &bytes, timestamp: timestamp, packet: packet, nanoseconds: nanoseconds, bigEndian: bigEndian)
            var seconds = timestamp / 1_000_000
            var fraction = timestamp % 1_000_000
            if fraction < 0 {
                seconds -= 1
                fraction += 1_000_000
            }
            let held = Int64(UInt32(truncatingIfNeeded: seconds)) * 1_000_000 + fraction
            written.append(Written(timestamp: held, flags: 0, packet: packet))
        }
    default:
        let tsresol: UInt8? = input.bool() ? input.u8() : nil
        bytes = PcapngWriter.sectionHeader() + PcapngWriter.interfaceDescription(linkType: 187, tsresol: tsresol)
        for _ in 0..<count {
            let ticks = input.u64()
            let packet = input.take(Int(input.u8()))
            bytes += PcapngWriter.enhancedPacket(ticks: ticks, packet: packet)
            written.append(Written(timestamp: pcapngMicros(ticks, tsresol: tsresol), flags: 0, packet: packet))
        }
    }

    let reader: CaptureReader
    do {
        reader = try CaptureReader(bytes: bytes)
    } catch {
        fuzzCheck(false, "the writer's file header is refused: \(error)")
        return 0
    }
    for (index, record) in written.enumerated() {
        do {
            guard let packet = try reader.next() else {
                fuzzCheck(false, "the capture ends at record \(index) of \(written.count)")
                return 0
            }
            fuzzCheck(record.timestamp != nil, "record \(index): an unrepresentable time read as \(packet.timestamp)")
            fuzzCheck(
                packet.timestamp == record.timestamp, "record \(index): time \(packet.timestamp), wrote \(record)")
            fuzzCheck(Array(packet.bytes) == record.packet, "record \(index): bytes differ")
            fuzzCheck(packet.flags == record.flags, "record \(index): flags \(packet.flags), wrote \(record.flags)")
        } catch {
            guard case .timestampOutOfRange = error.kind, record.timestamp == nil else {
                fuzzCheck(false, "record \(index): \(error) for \(record)")
                return 0
            }
            return 0
        }
    }
    fuzzCheck((try? reader.next()) == nil, "a record after the last one written")
    return 0
}

func fuzzSeeds(_ sources: SeedSources) -> [[UInt8]] {
    var seeds: [[UInt8]] = [[0, 2, 1], [1, 1, 0, 1, 1], [2, 3, 1, 0x89]]
    for record in sources.records.prefix(50) {
        let stamp = (0..<8).map { UInt8(truncatingIfNeeded: record.timestamp >> (56 - 8 * $0)) }
        seeds.append(
            [UInt8(seeds.count % 3), 0, 1] + stamp + [0, 0, 0, 3, UInt8(min(record.bytes.count, 255))]
                + record.bytes.prefix(255))
    }
    return seeds
}
