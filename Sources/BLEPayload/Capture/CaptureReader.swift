import Glibc

/// How a record's bytes are framed.
public enum LinkType: Hashable, Sendable {
    /// btsnoop 1001: an HCI packet without a type byte; the record flags say which kind.
    case hciUnencapsulated
    /// btsnoop 1002, pcap 187: H4, a type byte then the HCI packet.
    case h4
    /// pcap 201: a 4-byte big-endian direction, then H4.
    case h4WithDirection
    /// btsnoop 2001 (btmon): the record flags hold index << 16 | opcode.
    case btmon
    /// pcap 254: Linux monitor header (adapter u16 BE, opcode u16 BE), then the packet.
    case linuxMonitor
    /// pcap 256: Bluetooth LE link layer with a 10-byte pseudo-header.
    case leLinkLayerWithPseudoHeader
    /// pcap 272: nRF Sniffer for Bluetooth LE.
    case nordicBLE

    public init?(pcapLinkType: UInt32) {
        switch pcapLinkType {
        case 187: self = .h4
        case 201: self = .h4WithDirection
        case 254: self = .linuxMonitor
        case 256: self = .leLinkLayerWithPseudoHeader
        case 272: self = .nordicBLE
        default: return nil
        }
    }

    public init?(btsnoopDatalink: UInt32) {
        switch btsnoopDatalink {
        case 1001: self = .hciUnencapsulated
        case 1002: self = .h4
        case 2001: self = .btmon
        default: return nil
        }
    }
}

/// The container a capture uses.
public enum CaptureFormat: Hashable, Sendable {
    case btsnoop(datalink: UInt32)
    case pcap(linkType: UInt32, nanoseconds: Bool, bigEndian: Bool)
    case pcapng
}

/// One record of a capture. `bytes` borrows the reader's buffer and is valid
/// until the next call to `CaptureReader.next()`.
public struct CapturePacket {
    /// 0-based record index (pcapng: block index).
    public var index: Int
    /// File offset of the record's header.
    public var offset: Int64
    /// Unix microseconds.
    public var timestamp: Int64
    public var linkType: LinkType
    /// btsnoop record flags (0 for pcap and pcapng).
    public var flags: UInt32
    public var bytes: UnsafeRawBufferPointer
}

/// Streams the records of a btsnoop, pcap or pcapng capture through one
/// fixed-size buffer, so memory stays flat whatever the file's size.
public final class CaptureReader {
    /// Records longer than this are "absurd": no HCI packet or radio PDU comes close.
    public static let maxRecordLength = 1 << 20

    public let name: String
    @exclusivity(unchecked) public private(set) var format: CaptureFormat = .pcapng

    private enum Input {
        case descriptor(Int32, owned: Bool)
        case memory([UInt8], position: Int)
    }

    private var input: Input
    var buffer: UnsafeMutableRawBufferPointer
    var start = 0
    var end = 0
    private var endOfInput = false
    /// File offset of `buffer[start]`.
    var position: Int64 = 0
    var recordIndex = 0

    // pcap / btsnoop
    var linkType: LinkType = .h4
    var bigEndian = true
    private var pcapNanoseconds = false
    // pcapng: per-interface link type and timestamp resolution of the current section.
    struct Interface {
        var linkType: LinkType
        var resolution: TimestampResolution
    }
    var interfaces: [Interface] = []

    /// Opens `path` and reads its file header. Only a regular file is read: a FIFO or a device is
    /// refused at once (`RegularFile.open`); a pipe the caller opened is read with
    /// `init(fileDescriptor:name:)`.
    public convenience init(path: String) throws(CaptureError) {
        let fd: Int32
        do {
            fd = try RegularFile.open(path).descriptor
        } catch {
            let kind: CaptureError.Kind =
                switch error {
                case .open(let code), .stat(let code): .cannotOpen(errno: code)
                case .notRegular(let what): .notRegularFile(what)
                }
            throw CaptureError(file: path, recordIndex: -1, offset: 0, kind: kind)
        }
        try self.init(input: .descriptor(fd, owned: true), name: path)
    }

    /// Reads a capture from a file descriptor it does not own (a pipe, say).
    public convenience init(fileDescriptor: Int32, name: String) throws(CaptureError) {
        try self.init(input: .descriptor(fileDescriptor, owned: false), name: name)
    }

    /// Reads a capture held in memory.
    public convenience init(bytes: [UInt8], name: String = "<memory>") throws(CaptureError) {
        try self.init(input: .memory(bytes, position: 0), name: name)
    }

    private init(input: Input, name: String) throws(CaptureError) {
        self.input = input
        self.name = name
        self.buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 * 1024, alignment: 8)
        try readFileHeader()
    }

    /// The size of the read buffer: it grows only for a record longer than it, up to `maxRecordLength`.
    public var bufferCapacity: Int { buffer.count }

    deinit {
        buffer.deallocate()
        if case .descriptor(let fd, true) = input { close(fd) }
    }

    // MARK: Buffering

    func error(_ kind: CaptureError.Kind, at offset: Int64? = nil, record: Int? = nil) -> CaptureError {
        CaptureError(file: name, recordIndex: record ?? recordIndex, offset: offset ?? position, kind: kind)
    }

    /// Makes at least `count` bytes available from `start`; false at a clean end of input.
    @inline(__always)
    func fill(_ count: Int) throws(CaptureError) -> Bool {
        if end - start >= count { return true }
        return try refill(count)
    }

    @inline(never)
    func refill(_ count: Int) throws(CaptureError) -> Bool {
        while end - start < count {
            if endOfInput { return false }
            if count > buffer.count {
                let grown = UnsafeMutableRawBufferPointer.allocate(byteCount: count, alignment: 8)
                grown.copyMemory(from: UnsafeRawBufferPointer(rebasing: buffer[start..<end]))
                buffer.deallocate()
                buffer = grown
                end -= start
                start = 0
            } else if start > 0 && buffer.count - end < count - (end - start) {
                let live = end - start
                if live > 0, let base = buffer.baseAddress {
                    memmove(base, base + start, live)
                }
                start = 0
                end = live
            }
            let room = UnsafeMutableRawBufferPointer(rebasing: buffer[end...])
            let got = try readInput(into: room)
            if got == 0 { endOfInput = true } else { end += got }
        }
        return true
    }

    private func readInput(into room: UnsafeMutableRawBufferPointer) throws(CaptureError) -> Int {
        switch input {
        case .descriptor(let fd, _):
            while true {
                let got = read(fd, room.baseAddress, room.count)
                if got >= 0 { return got }
                if errno == EINTR { continue }
                throw error(.readFailed(errno: errno))
            }
        case .memory(let bytes, let offset):
            let count = min(room.count, bytes.count - offset)
            bytes.withUnsafeBytes { source in
                room.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[offset..<offset + count]))
            }
            input = .memory(bytes, position: offset + count)
            return count
        }
    }

    /// Requires `count` bytes, failing with "truncated" when the file ends first.
    @inline(__always)
    func require(_ count: Int) throws(CaptureError) {
        guard try fill(count) else {
            throw error(.truncated(needed: count, available: end - start))
        }
    }

    var window: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: buffer[start..<end])
    }

    func consume(_ count: Int) {
        start += count
        position += Int64(count)
    }

    func u16(_ at: Int) -> UInt16 {
        let raw = window.loadUnaligned(fromByteOffset: at, as: UInt16.self)
        return bigEndian ? UInt16(bigEndian: raw) : UInt16(littleEndian: raw)
    }

    func u32(_ at: Int) -> UInt32 {
        let raw = window.loadUnaligned(fromByteOffset: at, as: UInt32.self)
        return bigEndian ? UInt32(bigEndian: raw) : UInt32(littleEndian: raw)
    }

    func u64(_ at: Int) -> UInt64 {
        let raw = window.loadUnaligned(fromByteOffset: at, as: UInt64.self)
        return bigEndian ? UInt64(bigEndian: raw) : UInt64(littleEndian: raw)
    }

    // MARK: File header

    private func readFileHeader() throws(CaptureError) {
        guard try fill(4) else {
            throw error(.truncated(needed: 4, available: end - start), record: -1)
        }
        let magicBE = UInt32(bigEndian: window.loadUnaligned(as: UInt32.self))
        switch magicBE {
        case 0x6274_736E: // "btsn"
            try readBTSnoopHeader()
        case 0xA1B2_C3D4, 0xA1B2_3C4D, 0xD4C3_B2A1, 0x4D3C_B2A1:
            try readPcapHeader(magicBE)
        case 0x0A0D_0D0A:
            format = .pcapng
        default:
            throw error(.badMagic, record: -1)
        }
    }

    private static let btsnoopMagic: [UInt8] = Array("btsnoop\0".utf8)

    private func readBTSnoopHeader() throws(CaptureError) {
        guard try fill(16) else {
            throw error(.truncated(needed: 16, available: end - start), record: -1)
        }
        guard window.prefix(8).elementsEqual(Self.btsnoopMagic) else { throw error(.badMagic, record: -1) }
        bigEndian = true
        let version = u32(8)
        guard version == 1 else { throw error(.unsupportedVersion(version), record: -1) }
        let datalink = u32(12)
        guard let type = LinkType(btsnoopDatalink: datalink) else {
            throw error(.unknownLinkType(datalink), at: 12, record: -1)
        }
        linkType = type
        format = .btsnoop(datalink: datalink)
        consume(16)
    }

    private func readPcapHeader(_ magicBE: UInt32) throws(CaptureError) {
        guard try fill(24) else {
            throw error(.truncated(needed: 24, available: end - start), record: -1)
        }
        bigEndian = magicBE == 0xA1B2_C3D4 || magicBE == 0xA1B2_3C4D
        pcapNanoseconds = magicBE == 0xA1B2_3C4D || magicBE == 0x4D3C_B2A1
        let major = u16(4)
        guard major == 2 else { throw error(.unsupportedVersion(UInt32(major)), record: -1) }
        // The link type is the low 16 bits; the upper bits carry FCS information.
        let network = u32(20) & 0xFFFF
        guard let type = LinkType(pcapLinkType: network) else {
            throw error(.unknownLinkType(network), at: 20, record: -1)
        }
        linkType = type
        format = .pcap(linkType: network, nanoseconds: pcapNanoseconds, bigEndian: bigEndian)
        consume(24)
    }

    // MARK: Records

    /// The next packet record, or nil at the end of the capture. The packet's
    /// bytes stay valid until the next call.
    public func next() throws(CaptureError) -> CapturePacket? {
        switch format {
        case .btsnoop: return try nextBTSnoop()
        case .pcap: return try nextPcap()
        case .pcapng: return try nextPcapng()
        }
    }

    /// Unix µs minus btsnoop µs (btsnoop counts from midnight, 1 January of year 0).
    public static let btsnoopEpochOffset: Int64 = 0x00DC_DDB3_0F2F_8000

    private func nextBTSnoop() throws(CaptureError) -> CapturePacket? {
        guard try fill(1) else { return nil }
        try require(24)
        let included = Int(u32(4))
        guard included <= Self.maxRecordLength else { throw error(.absurdLength(included)) }
        let flags = u32(8)
        let stamp = Int64(bitPattern: u64(16))
        let (unixMicros, overflow) = stamp.subtractingReportingOverflow(Self.btsnoopEpochOffset)
        guard !overflow else {
            throw error(.timestampOutOfRange("btsnoop time \(stamp) µs since year 0 is before Int64 µs since 1970"))
        }
        try require(24 + included)
        let packet = CapturePacket(
            index: recordIndex, offset: position, timestamp: unixMicros, linkType: linkType,
            flags: flags, bytes: UnsafeRawBufferPointer(rebasing: window[24..<24 + included]))
        consume(24 + included)
        recordIndex += 1
        return packet
    }

    private func nextPcap() throws(CaptureError) -> CapturePacket? {
        guard try fill(1) else { return nil }
        try require(16)
        let seconds = Int64(u32(0))
        let fraction = Int64(u32(4))
        let included = Int(u32(8))
        guard included <= Self.maxRecordLength else { throw error(.absurdLength(included)) }
        let unitsPerSecond: Int64 = pcapNanoseconds ? 1_000_000_000 : 1_000_000
        guard fraction < unitsPerSecond else {
            let unit = pcapNanoseconds ? "ns" : "µs"
            throw error(.timestampOutOfRange("fraction \(fraction) \(unit) is not below one second"))
        }
        try require(16 + included)
        let micros = pcapNanoseconds ? fraction / 1000 : fraction
        // At most (2^32 - 1) s × 10^6 + 999,999 µs: far inside Int64.
        let packet = CapturePacket(
            index: recordIndex, offset: position, timestamp: seconds * 1_000_000 + micros, linkType: linkType,
            flags: 0, bytes: UnsafeRawBufferPointer(rebasing: window[16..<16 + included]))
        consume(16 + included)
        recordIndex += 1
        return packet
    }
}
