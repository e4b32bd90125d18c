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

    /// Appends one record. `timestamp` is Unix microseconds.
    public static func appendRecord(
        to bytes: inout [UInt8], timestamp: Int64, flags: UInt32 = receivedEventFlags, packet: some Collection<UInt8>,
        drops: UInt32 = 0
    ) {
        appendBE32(UInt32(packet.count), to: &bytes)  // original length
        appendBE32(UInt32(packet.count), to: &bytes)  // included length
        appendBE32(flags, to: &bytes)
        appendBE32(drops, to: &bytes)
        let stamp = UInt64(bitPattern: timestamp &+ CaptureReader.btsnoopEpochOffset)
        appendBE32(UInt32(truncatingIfNeeded: stamp >> 32), to: &bytes)
        appendBE32(UInt32(truncatingIfNeeded: stamp), to: &bytes)
        bytes.append(contentsOf: packet)
    }

    static func appendBE32(_ value: UInt32, to bytes: inout [UInt8]) {
        bytes += [UInt8(value >> 24), UInt8(truncatingIfNeeded: value >> 16),
                  UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value)]
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

    public static func appendRecord(
        to bytes: inout [UInt8], timestamp: Int64, packet: some Collection<UInt8>, nanoseconds: Bool = false,
        bigEndian: Bool = false
    ) {
        append32(UInt32(truncatingIfNeeded: timestamp / 1_000_000), bigEndian, &bytes)
        let fraction = UInt32(truncatingIfNeeded: timestamp % 1_000_000)
        append32(nanoseconds ? fraction * 1000 : fraction, bigEndian, &bytes)
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
