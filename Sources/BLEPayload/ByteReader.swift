/// A read past the end of a buffer: where it happened and how much was missing.
public struct TruncatedRead: Error, Equatable, Sendable {
    /// Offset (from the start of the buffer) at which the read began.
    public var offset: Int
    /// Bytes the read needed.
    public var needed: Int
    /// Bytes that were left.
    public var available: Int
}

/// A bounds-checked cursor over borrowed bytes. Every read checks its length,
/// so external bytes can never cause an out-of-range access.
///
/// The cursor does not own its bytes: it is valid only while they are.
public struct ByteReader {
    public let bytes: UnsafeRawBufferPointer
    public private(set) var offset: Int

    public init(_ bytes: UnsafeRawBufferPointer, offset: Int = 0) {
        self.bytes = bytes
        self.offset = offset
    }

    public var remaining: Int { bytes.count - offset }

    public var isAtEnd: Bool { offset >= bytes.count }

    @inline(__always)
    mutating func require(_ count: Int) throws(TruncatedRead) {
        guard count >= 0, count <= bytes.count - offset else {
            throw truncated(count)
        }
    }

    @inline(never)
    func truncated(_ count: Int) -> TruncatedRead {
        TruncatedRead(offset: offset, needed: count, available: max(0, bytes.count - offset))
    }

    @inline(__always)
    public mutating func u8() throws(TruncatedRead) -> UInt8 {
        try require(1)
        let value = bytes.load(fromByteOffset: offset, as: UInt8.self)
        offset += 1
        return value
    }

    @inline(__always)
    public mutating func i8() throws(TruncatedRead) -> Int8 {
        Int8(bitPattern: try u8())
    }

    @inline(__always)
    public mutating func u16le() throws(TruncatedRead) -> UInt16 {
        try require(2)
        let value = UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt16.self))
        offset += 2
        return value
    }

    @inline(__always)
    public mutating func u16be() throws(TruncatedRead) -> UInt16 {
        try require(2)
        let value = UInt16(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt16.self))
        offset += 2
        return value
    }

    @inline(__always)
    public mutating func u32le() throws(TruncatedRead) -> UInt32 {
        try require(4)
        let value = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
        offset += 4
        return value
    }

    @inline(__always)
    public mutating func u32be() throws(TruncatedRead) -> UInt32 {
        try require(4)
        let value = UInt32(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
        offset += 4
        return value
    }

    @inline(__always)
    public mutating func u64be() throws(TruncatedRead) -> UInt64 {
        try require(8)
        let value = UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
        offset += 8
        return value
    }

    /// A 48-bit little-endian Bluetooth device address.
    @inline(__always)
    public mutating func address() throws(TruncatedRead) -> BluetoothAddress {
        try require(6)
        let low = UInt64(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
        let high = UInt64(UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 4, as: UInt16.self)))
        offset += 6
        return BluetoothAddress(rawValue: high << 32 | low)
    }

    /// The next `count` bytes, borrowed from the same storage.
    @inline(__always)
    public mutating func slice(_ count: Int) throws(TruncatedRead) -> UnsafeRawBufferPointer {
        try require(count)
        let start = offset
        offset += count
        return UnsafeRawBufferPointer(rebasing: bytes[start..<start + count])
    }

    @inline(__always)
    public mutating func skip(_ count: Int) throws(TruncatedRead) {
        try require(count)
        offset += count
    }
}

extension UnsafeRawBufferPointer {
    /// Bytes `range`, or nil when the range falls outside the buffer.
    func checkedSlice(_ start: Int, _ count: Int) -> UnsafeRawBufferPointer? {
        guard start >= 0, count >= 0, start <= self.count, count <= self.count - start else { return nil }
        return UnsafeRawBufferPointer(rebasing: self[start..<start + count])
    }
}
