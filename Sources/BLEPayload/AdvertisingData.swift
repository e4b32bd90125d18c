/// One AD structure: `[length][type][data]`, where length counts type and data.
public struct ADStructure {
    public var type: UInt8
    public var data: UnsafeRawBufferPointer
    /// Offset of the structure's length byte within the advertising data.
    public var offset: Int
}

/// Well-known AD types.
public enum ADType {
    public static let flags: UInt8 = 0x01
    public static let incompleteServiceUUIDs16: UInt8 = 0x02
    public static let completeServiceUUIDs16: UInt8 = 0x03
    public static let shortenedLocalName: UInt8 = 0x08
    public static let completeLocalName: UInt8 = 0x09
    public static let txPowerLevel: UInt8 = 0x0A
    public static let serviceData16: UInt8 = 0x16
    public static let manufacturerSpecificData: UInt8 = 0xFF
}

/// Advertising data (the AD structures of one report), borrowed from the
/// buffer it was decoded from. It is valid only while that buffer is, which for
/// decoded reports means inside the callback that delivered them.
public struct AdvertisingData: Sequence {
    public let bytes: UnsafeRawBufferPointer

    public init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    public struct Iterator: IteratorProtocol {
        let bytes: UnsafeRawBufferPointer
        var offset = 0
        /// Set when a structure overran the buffer: the offset of its length byte.
        public private(set) var malformedOffset: Int?

        init(bytes: UnsafeRawBufferPointer) {
            self.bytes = bytes
        }

        public mutating func next() -> ADStructure? {
            guard offset < bytes.count, malformedOffset == nil else { return nil }
            let start = offset
            let length = Int(bytes[start])
            // A zero length ends the significant part (the rest is padding).
            guard length != 0 else {
                offset = bytes.count
                return nil
            }
            guard length <= bytes.count - start - 1 else {
                malformedOffset = start
                return nil
            }
            offset = start + 1 + length
            return ADStructure(
                type: bytes[start + 1],
                data: UnsafeRawBufferPointer(rebasing: bytes[(start + 2)..<(start + 1 + length)]),
                offset: start)
        }
    }

    public func makeIterator() -> Iterator { Iterator(bytes: bytes) }

    /// The offset of the first structure that overruns the data, or nil when
    /// every structure fits.
    public var malformedOffset: Int? {
        var iterator = makeIterator()
        while iterator.next() != nil {}
        return iterator.malformedOffset
    }

    /// The first structure of `type`.
    public func first(_ type: UInt8) -> ADStructure? {
        for structure in self where structure.type == type { return structure }
        return nil
    }

    public var flags: UInt8? {
        guard let data = first(ADType.flags)?.data, let byte = data.first else { return nil }
        return byte
    }

    /// The TX Power Level structure (0x0A), in dBm.
    public var txPowerLevel: Int8? {
        guard let data = first(ADType.txPowerLevel)?.data, let byte = data.first else { return nil }
        return Int8(bitPattern: byte)
    }

    /// The complete local name, or failing that the shortened one, as raw bytes.
    public var localName: UnsafeRawBufferPointer? {
        first(ADType.completeLocalName)?.data ?? first(ADType.shortenedLocalName)?.data
    }

    /// Every manufacturer-specific data structure long enough to hold a company id.
    public var manufacturerData: ManufacturerDataSequence { ManufacturerDataSequence(data: self) }

    /// Every 16-bit service UUID listed in 0x02 and 0x03 structures.
    public var serviceUUIDs16: [UInt16] {
        var uuids: [UInt16] = []
        for structure in self
        where structure.type == ADType.incompleteServiceUUIDs16 || structure.type == ADType.completeServiceUUIDs16 {
            var reader = ByteReader(structure.data)
            while let uuid = try? reader.u16le() { uuids.append(uuid) }
        }
        return uuids
    }

    /// Every 16-bit service data structure (0x16): UUID and payload.
    public var serviceData16: [(uuid: UInt16, data: UnsafeRawBufferPointer)] {
        var entries: [(uuid: UInt16, data: UnsafeRawBufferPointer)] = []
        for structure in self where structure.type == ADType.serviceData16 {
            var reader = ByteReader(structure.data)
            guard let uuid = try? reader.u16le() else { continue }
            entries.append((uuid, UnsafeRawBufferPointer(rebasing: structure.data[2...])))
        }
        return entries
    }
}

/// Manufacturer-specific data: a little-endian company identifier and its bytes.
public struct ManufacturerData {
    public var companyID: UInt16
    /// The bytes after the company identifier.
    public var payload: UnsafeRawBufferPointer
}

public struct ManufacturerDataSequence: Sequence {
    let data: AdvertisingData

    init(data: AdvertisingData) { self.data = data }

    public struct Iterator: IteratorProtocol {
        var inner: AdvertisingData.Iterator

        init(inner: AdvertisingData.Iterator) { self.inner = inner }

        public mutating func next() -> ManufacturerData? {
            while let structure = inner.next() {
                guard structure.type == ADType.manufacturerSpecificData, structure.data.count >= 2 else { continue }
                let company = UInt16(structure.data[0]) | UInt16(structure.data[1]) << 8
                return ManufacturerData(
                    companyID: company,
                    payload: UnsafeRawBufferPointer(rebasing: structure.data[2...]))
            }
            return nil
        }
    }

    public func makeIterator() -> Iterator { Iterator(inner: data.makeIterator()) }
}

/// Builds advertising data; the encoder that mirrors `AdvertisingData`.
public struct AdvertisingDataBuilder {
    public private(set) var bytes: [UInt8] = []

    public init() {}

    /// Appends one structure. Data longer than 254 bytes cannot be encoded and traps,
    /// since callers build it from values they control.
    public mutating func append(type: UInt8, data: some Collection<UInt8>) {
        precondition(data.count <= 254, "an AD structure holds at most 254 data bytes")
        bytes.append(UInt8(data.count + 1))
        bytes.append(type)
        bytes.append(contentsOf: data)
    }

    public mutating func appendFlags(_ flags: UInt8) {
        append(type: ADType.flags, data: [flags])
    }

    public mutating func appendManufacturerData(companyID: UInt16, payload: some Collection<UInt8>) {
        Self.appendManufacturerData(companyID: companyID, payload: payload, to: &bytes)
    }

    public mutating func appendTXPowerLevel(_ dBm: Int8) {
        Self.appendTXPowerLevel(dBm, to: &bytes)
    }

    /// Appends a manufacturer-specific structure (`[len, 0xFF, company LE, payload]`) to `bytes`
    /// in place, for callers that rebuild advertising data in a reused buffer. A payload over
    /// 252 bytes cannot be encoded and traps: check it first.
    public static func appendManufacturerData(
        companyID: UInt16, payload: some Collection<UInt8>, to bytes: inout [UInt8]
    ) {
        precondition(payload.count <= 252, "manufacturer data holds at most 252 payload bytes")
        bytes.append(UInt8(payload.count + 3))
        bytes.append(ADType.manufacturerSpecificData)
        bytes.append(UInt8(truncatingIfNeeded: companyID))
        bytes.append(UInt8(truncatingIfNeeded: companyID >> 8))
        bytes.append(contentsOf: payload)
    }

    /// Appends a TX Power Level structure (`[2, 0x0A, dBm]`) to `bytes` in place.
    public static func appendTXPowerLevel(_ dBm: Int8, to bytes: inout [UInt8]) {
        bytes.append(2)
        bytes.append(ADType.txPowerLevel)
        bytes.append(UInt8(bitPattern: dBm))
    }

    public mutating func appendLocalName(_ name: String, complete: Bool = true) {
        append(type: complete ? ADType.completeLocalName : ADType.shortenedLocalName, data: Array(name.utf8))
    }
}
