/// A 48-bit Bluetooth device address. `rawValue` holds the address as a number,
/// so the most significant byte is the first one BlueZ prints.
public struct BluetoothAddress: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    public var rawValue: UInt64

    public init(rawValue: UInt64) {
        self.rawValue = rawValue & 0xFFFF_FFFF_FFFF
    }

    /// Parses `"AA:BB:CC:DD:EE:FF"` (either case).
    public init?(_ text: String) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 6 else { return nil }
        var value: UInt64 = 0
        for part in parts {
            guard part.count == 2, let byte = UInt8(part, radix: 16) else { return nil }
            value = value << 8 | UInt64(byte)
        }
        self.init(rawValue: value)
    }

    public static func < (lhs: BluetoothAddress, rhs: BluetoothAddress) -> Bool {
        lhs.rawValue < rhs.rawValue
    }

    /// The six bytes in over-the-air (little-endian) order.
    public var littleEndianBytes: [UInt8] {
        (0..<6).map { UInt8(truncatingIfNeeded: rawValue >> (8 * $0)) }
    }

    /// Upper-case `AA:BB:CC:DD:EE:FF`, as BlueZ prints addresses. Written as 17 bytes at once: a
    /// status reply builds over a thousand of these on the hub's loop.
    public var description: String {
        String(unsafeUninitializedCapacity: 17) { text in
            var index = 0
            for shift in stride(from: 40, through: 0, by: -8) {
                let byte = UInt8(truncatingIfNeeded: rawValue >> UInt64(shift))
                text[index] = hexDigitsUpper[Int(byte >> 4)]
                text[index + 1] = hexDigitsUpper[Int(byte & 0xF)]
                index += 2
                if shift != 0 {
                    text[index] = UInt8(ascii: ":")
                    index += 1
                }
            }
            return index
        }
    }
}

private let hexDigitsUpper: [UInt8] = Array("0123456789ABCDEF".utf8)

/// The address type of an advertiser, as HCI reports it.
public enum AddressType: Hashable, Sendable {
    case publicDevice
    case randomDevice
    case publicIdentity
    case randomIdentity
    /// Extended reports only: no address was sent (0xFF).
    case anonymous
    case reserved(UInt8)

    public init(hciValue: UInt8) {
        switch hciValue {
        case 0x00: self = .publicDevice
        case 0x01: self = .randomDevice
        case 0x02: self = .publicIdentity
        case 0x03: self = .randomIdentity
        case 0xFF: self = .anonymous
        default: self = .reserved(hciValue)
        }
    }

    public var hciValue: UInt8 {
        switch self {
        case .publicDevice: 0x00
        case .randomDevice: 0x01
        case .publicIdentity: 0x02
        case .randomIdentity: 0x03
        case .anonymous: 0xFF
        case .reserved(let value): value
        }
    }

    /// The name used in replay JSON and the socket protocol.
    public var name: String {
        switch self {
        case .publicDevice: "public"
        case .randomDevice: "random"
        case .publicIdentity: "public_identity"
        case .randomIdentity: "random_identity"
        case .anonymous: "anonymous"
        case .reserved(let value): "reserved_\(value)"
        }
    }
}
