/// Writes btsnoop captures (the mirror of `CaptureReader`'s btsnoop path).
/// It produces bytes; the caller decides where they go.
public enum BTSnoopWriter {
    /// Record flags for a received HCI event (bit 0: received, bit 1: command/event).
    public static let receivedEventFlags: UInt32 = 0x3

    public static func fileHeader(datalink: UInt32 = 1002) -> [UInt8] {
        var bytes = Array("btsnoop\0".utf8)
        appendBE32(1, to: &bytes)
        appendBE32(datalink, to: &bytes)
        return bytes
    }

    /// The latest time a btsnoop record can hold: year 0 plus `Int64.max` µs (year 292,277).
    public static let latestTimestamp = Int64.max - CaptureReader.btsnoopEpochOffset

    /// Appends one record. `timestamp` is Unix microseconds; any `Int64` from `Int64.min` to
    /// `latestTimestamp` round-trips. A later one is written wrapped (it never traps), and
    /// `CaptureReader` then reports the record as out of range rather than misreading it.
    public static func appendRecord(
        to bytes: inout [UInt8], timestamp: Int64, flags: UInt32 = receivedEventFlags, packet: some Collection<UInt8>,
        drops: UInt32 = 0
    ) {
        appendBE32(UInt32(packet.count), to: &bytes) // original length
        appendBE32(UInt32(packet.count), to: &bytes) // included length
        appendBE32(flags, to: &bytes)
        appendBE32(drops, to: &bytes)
        let stamp = UInt64(bitPattern: timestamp &+ CaptureReader.btsnoopEpochOffset)
        appendBE32(UInt32(truncatingIfNeeded: stamp >> 32), to: &bytes)
        appendBE32(UInt32(truncatingIfNeeded: stamp), to: &bytes)
        bytes.append(contentsOf: packet)
    }

    static func appendBE32(_ value: UInt32, to bytes: inout [UInt8]) {
        bytes += [
            UInt8(value >> 24), UInt8(truncatingIfNeeded: value >> 16),
            UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value),
        ]
    }
}

/// Writes classic pcap captures, in either byte order and resolution.
public enum PcapWriter {
    public static func fileHeader(linkType: UInt32, nanoseconds: Bool = false, bigEndian: Bool = false) -> [UInt8] {
        var bytes: [UInt8] = []
        append32(nanoseconds ? 0xA1B2_3C4D : 0xA1B2_C3D4, bigEndian, &bytes)
        append16(2, bigEndian, &bytes)
        append16(4, bigEndian, &bytes)
        append32(0, bigEndian, &bytes)
        append32(0, bigEndian, &bytes)
        append32(262_144, bigEndian, &bytes)
        append32(linkType, bigEndian, &bytes)
        return bytes
    }

    /// Appends one record. `timestamp` is Unix microseconds; pcap holds whole seconds from 0 to
    /// 2^32 - 1 (1970 to 2106) and the fraction. Seconds outside that range are written modulo
    /// 2^32 (never a trap); the fraction is always the non-negative remainder.
    public static func appendRecord(
        to bytes: inout [UInt8], timestamp: Int64, packet: some Collection<UInt8>, nanoseconds: Bool = false,
        bigEndian: Bool = false
    ) {
        // Floor division, so a negative time keeps a fraction in 0..<10^6.
        var seconds = timestamp / 1_000_000
        var fraction = timestamp % 1_000_000
        if fraction < 0 {
            seconds -= 1
            fraction += 1_000_000
        }
        append32(UInt32(truncatingIfNeeded: seconds), bigEndian, &bytes)
        let units = UInt32(fraction) // 0..<10^6
        append32(nanoseconds ? units * 1000 : units, bigEndian, &bytes)
        append32(UInt32(packet.count), bigEndian, &bytes)
        append32(UInt32(packet.count), bigEndian, &bytes)
        bytes.append(contentsOf: packet)
    }

    static func append16(_ value: UInt16, _ bigEndian: Bool, _ bytes: inout [UInt8]) {
        let ordered = bigEndian ? value.bigEndian : value.littleEndian
        withUnsafeBytes(of: ordered) { bytes += $0 }
    }

    static func append32(_ value: UInt32, _ bigEndian: Bool, _ bytes: inout [UInt8]) {
        let ordered = bigEndian ? value.bigEndian : value.littleEndian
        withUnsafeBytes(of: ordered) { bytes += $0 }
    }
}

/// Writes little-endian pcapng captures: one section, interfaces with an optional `if_tsresol`,
/// enhanced packet blocks. Timestamps are raw 64-bit counts in the interface's units, so a test
/// can write any value, including ones `CaptureReader` must refuse.
public enum PcapngWriter {
    public static func sectionHeader() -> [UInt8] {
        var body = le32(0x1A2B_3C4D) + le16(1) + le16(0)
        body += le32(UInt32.max) + le32(UInt32.max) // section length: unknown (-1)
        return block(type: 0x0A0D_0D0A, body: body)
    }

    /// An interface description; `tsresol` is the raw `if_tsresol` byte (none: microseconds).
    public static func interfaceDescription(linkType: UInt16, tsresol: UInt8? = nil) -> [UInt8] {
        var body = le16(linkType) + le16(0) + le32(262_144)
        if let tsresol {
            body += le16(9) + le16(1) + [tsresol, 0, 0, 0]
            body += le16(0) + le16(0)
        }
        return block(type: 1, body: body)
    }

    public static func enhancedPacket(interface: UInt32 = 0, ticks: UInt64, packet: some Collection<UInt8>)
        -> [UInt8]
    {
        var body = le32(interface) + le32(UInt32(truncatingIfNeeded: ticks >> 32))
        body += le32(UInt32(truncatingIfNeeded: ticks)) + le32(UInt32(packet.count)) + le32(UInt32(packet.count))
        body += packet
        body += [UInt8](repeating: 0, count: (4 - packet.count % 4) % 4)
        return block(type: 6, body: body)
    }

    static func block(type: UInt32, body: [UInt8]) -> [UInt8] {
        let length = UInt32(12 + body.count)
        return le32(type) + le32(length) + body + le32(length)
    }

    static func le16(_ value: UInt16) -> [UInt8] {
        [UInt8(truncatingIfNeeded: value), UInt8(value >> 8)]
    }

    static func le32(_ value: UInt32) -> [UInt8] {
        [
            UInt8(truncatingIfNeeded: value), UInt8(truncatingIfNeeded: value >> 8),
            UInt8(truncatingIfNeeded: value >> 16), UInt8(value >> 24),
        ]
    }
}
