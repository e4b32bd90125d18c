// The capture-reader properties the three capture targets share (Fuzz/Pure/Capture*.swift).
import BLEPayload
import Glibc

/// One record as read, owned, with everything CaptureReader says about it.
struct ReadRecord: Equatable {
    var index: Int
    var offset: Int64
    var timestamp: Int64
    var linkType: LinkType
    var flags: UInt32
    var bytes: [UInt8]
}

/// Everything one pass over a capture gives: the format, the records, and the error that ended
/// it (without the file name, which differs between memory and file).
struct ReadResult: Equatable {
    var format: CaptureFormat?
    var records: [ReadRecord] = []
    var errorKind: CaptureError.Kind?
    var errorRecord: Int?
    var errorOffset: Int64?
}

private func readAll(_ open: () throws(CaptureError) -> CaptureReader) -> ReadResult {
    var result = ReadResult()
    var extractor = AdvertisingExtractor(maxPendingChains: 4)
    let decoder = GeoRacingDecoder()
    do throws(CaptureError) {
        let reader = try open()
        result.format = reader.format
        while let packet = try reader.next() {
            fuzzCheck(packet.index == result.records.count || result.format == .pcapng, "record index \(packet.index)")
            fuzzCheck(packet.bytes.count <= CaptureReader.maxRecordLength, "a record of \(packet.bytes.count) bytes")
            result.records.append(
                ReadRecord(
                    index: packet.index, offset: packet.offset, timestamp: packet.timestamp,
                    linkType: packet.linkType, flags: packet.flags, bytes: Array(packet.bytes)))
            extractor.process(packet) { report in
                fuzzCheck(report.data.bytes.count <= 1650, "a report of \(report.data.bytes.count) bytes")
                _ = decoder.decode(report.data)
            }
            fuzzCheck(
                reader.bufferCapacity <= max(256 * 1024, CaptureReader.maxRecordLength + 32),
                "the read buffer grew to \(reader.bufferCapacity) bytes")
        }
    } catch {
        result.errorKind = error.kind
        result.errorRecord = error.recordIndex
        result.errorOffset = error.offset
    }
    return result
}

/// Where this process writes the input for the file reader (tmpfs when there is one).
private let scratchPath: String = {
    let directory = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp"
    return "\(directory)/beacond-fuzz-\(getpid()).capture"
}()

private var scratchRegistered = false

private func writeScratch(_ bytes: UnsafeRawBufferPointer) {
    if !scratchRegistered {
        scratchRegistered = true
        atexit { unlink(scratchPath) }
    }
    guard let file = fopen(scratchPath, "wb") else {
        fuzzCheck(false, "cannot write \(scratchPath)")
        return
    }
    if bytes.count > 0 { fwrite(bytes.baseAddress, 1, bytes.count, file) }
    fclose(file)
}

/// Reads `bytes` as a capture from memory and from a file: both must give the same format, the
/// same records and the same error at the same record and offset.
func checkCapture(_ bytes: [UInt8]) {
    let fromMemory = readAll { () throws(CaptureError) in try CaptureReader(bytes: bytes) }
    bytes.withUnsafeBytes(writeScratch)
    let fromFile = readAll { () throws(CaptureError) in try CaptureReader(path: scratchPath) }
    fuzzCheck(
        fromMemory == fromFile,
        "memory and file readers differ: \(fromMemory.records.count) vs \(fromFile.records.count) records, "
            + "\(String(describing: fromMemory.errorKind)) vs \(String(describing: fromFile.errorKind))")
}

/// The input with its first bytes replaced by `magic` when it does not start with one of `accepted`,
/// so each capture target stays on its own format.
func forcingMagic(_ input: UnsafeRawBufferPointer, _ magic: [UInt8], accepted: [[UInt8]]) -> [UInt8] {
    var bytes = Array(input)
    if !accepted.contains(where: { bytes.starts(with: $0) }) {
        for (index, byte) in magic.enumerated() {
            if index < bytes.count { bytes[index] = byte } else { bytes.append(byte) }
        }
    }
    return bytes
}
