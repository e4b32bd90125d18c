/// A D-Bus type code (dbus-protocol.h's `DBUS_TYPE_*`, whose cast macros do not import into Swift).
struct DBusTypeCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    var rawValue: Int32

    init(rawValue: Int32) { self.rawValue = rawValue }

    private init(_ character: Unicode.Scalar) { rawValue = Int32(character.value) }

    static let invalid = DBusTypeCode(rawValue: 0)
    static let byte = DBusTypeCode("y")
    static let boolean = DBusTypeCode("b")
    static let int16 = DBusTypeCode("n")
    static let uint16 = DBusTypeCode("q")
    static let int32 = DBusTypeCode("i")
    static let uint32 = DBusTypeCode("u")
    static let int64 = DBusTypeCode("x")
    static let uint64 = DBusTypeCode("t")
    static let double = DBusTypeCode("d")
    static let string = DBusTypeCode("s")
    static let objectPath = DBusTypeCode("o")
    static let signature = DBusTypeCode("g")
    static let unixFD = DBusTypeCode("h")
    static let array = DBusTypeCode("a")
    static let variant = DBusTypeCode("v")
    static let structure = DBusTypeCode("r")
    static let dictEntry = DBusTypeCode("e")

    var isStringLike: Bool { self == .string || self == .objectPath || self == .signature }

    /// The code as its signature character (`end` for `invalid`).
    var description: String {
        guard self != .invalid, let scalar = Unicode.Scalar(UInt32(truncatingIfNeeded: rawValue)) else { return "end" }
        return String(Character(scalar))
    }
}

/// One D-Bus value with enough type information to write it back: arrays and dictionaries carry
/// their element signatures, so empty ones keep their type.
package indirect enum DBusValue: Hashable, Sendable {
    case byte(UInt8)
    case boolean(Bool)
    case int16(Int16)
    case uint16(UInt16)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(String)
    case signature(String)
    /// `ay`.
    case bytes([UInt8])
    /// `a<element>` for any element but bytes and dictionary entries.
    case array(element: String, [DBusValue])
    /// `a{<key><value>}`.
    case dictionary(key: String, value: String, [DBusDictEntry])
    case structure([DBusValue])
    case variant(DBusValue)

    var signature: String {
        switch self {
        case .byte: "y"
        case .boolean: "b"
        case .int16: "n"
        case .uint16: "q"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .string: "s"
        case .objectPath: "o"
        case .signature: "g"
        case .bytes: "ay"
        case .array(let element, _): "a" + element
        case .dictionary(let key, let value, _): "a{" + key + value + "}"
        case .structure(let fields): "(" + fields.map(\.signature).joined() + ")"
        case .variant: "v"
        }
    }

    /// `a{sv}` from names and values; each value is wrapped in a variant.
    package static func properties(_ pairs: KeyValuePairs<String, DBusValue>) -> DBusValue {
        .dictionary(key: "s", value: "v", pairs.map { DBusDictEntry(key: .string($0.key), value: .variant($0.value)) })
    }

    /// The value inside any number of variants.
    package var unwrapped: DBusValue {
        if case .variant(let inner) = self { return inner.unwrapped }
        return self
    }

    /// The text of a string, object path or signature.
    package var text: String? {
        switch unwrapped {
        case .string(let text), .objectPath(let text), .signature(let text): text
        default: nil
        }
    }

    /// The value for `key` in a dictionary keyed by strings or object paths.
    package subscript(key: String) -> DBusValue? {
        guard case .dictionary(_, _, let entries) = unwrapped else { return nil }
        return entries.first { $0.key.text == key }?.value
    }

    /// The elements of an array, a dictionary's values excluded.
    package var elements: [DBusValue]? {
        switch unwrapped {
        case .array(_, let elements), .structure(let elements): elements
        case .bytes(let bytes): bytes.map(DBusValue.byte)
        default: nil
        }
    }
}

package struct DBusDictEntry: Hashable, Sendable {
    package var key: DBusValue
    package var value: DBusValue

    package init(key: DBusValue, value: DBusValue) {
        self.key = key
        self.value = value
    }
}

/// Where a value sits in a message: the argument index, then the index inside each container
/// (a dictionary entry counts as a container of key 0 and value 1). Stored inline, so readers
/// can track it without allocating.
struct DBusPosition: Hashable, Sendable, CustomStringConvertible {
    static let maxDepth = 8
    /// 8 bits per level; an index past 255 is shown as 255.
    private var packed: UInt64 = 0
    private(set) var depth = 1

    static let firstArgument = DBusPosition()

    var index: Int {
        get { Int((packed >> UInt64(8 * (depth - 1))) & 0xFF) }
        set {
            let shift = UInt64(8 * (depth - 1))
            packed = packed & ~(0xFF << shift) | UInt64(min(max(newValue, 0), 255)) << shift
        }
    }

    /// The position of the first element inside the container here.
    var child: DBusPosition {
        var child = self
        if depth < Self.maxDepth { child.depth += 1 }
        child.index = 0
        return child
    }

    var description: String {
        (0..<depth).map { level in
            let value = (packed >> UInt64(8 * level)) & 0xFF
            return level == 0 ? "argument \(value)" : "\(value)"
        }.joined(separator: ".")
    }
}

/// A message did not have the shape a reader expected.
package struct DBusDecodingError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What the reader wanted, for example "a{qv}" or "the end of the arguments".
    var expected: String
    /// The signature actually found there ("end" past the last value).
    var found: String
    var position: DBusPosition

    package var description: String { "expected \(expected) at \(position), found '\(found)'" }
}

/// A value could not be written: libdbus would abort on it, so the writer refuses first.
package struct DBusEncodingError: Error, Hashable, Sendable, CustomStringConvertible {
    var reason: String
    package var description: String { reason }
}
