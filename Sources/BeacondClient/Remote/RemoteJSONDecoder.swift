/// Decodes `Decodable` types from the strict parser's value tree (`RemoteJSON`).
///
/// Why a `Decoder` over the tree rather than `JSONDecoder` after a validation pass:
/// - `JSONDecoder` takes the last of duplicate keys silently; the tree refuses them at parse time,
///   naming the key and its byte offset, so nothing ambiguous ever reaches a `Decodable` type.
/// - `JSONDecoder` cannot give a number's literal text, and it refuses a whole document for a
///   number beyond a Double (`"wind": 1e999`). The venue's loose fields need the literal
///   (`"id": 7` is `"7"`, a 5000-digit id is cut, not refused); the tree keeps it, and a number is
///   converted, and range-checked, only when a field asks for it.
/// - The body is parsed once, by the parser that already bounds depth and validates UTF-8.
///
/// The containers follow `JSONDecoder`'s conventions (`typeMismatch`, `keyNotFound`,
/// `valueNotFound`; `decodeIfPresent` gives nil for a missing key or null), with one addition: a
/// field declared as `RemoteJSON` receives the raw value, which is how the loose types read a
/// number's literal. Integers are decoded only from integer literals. Recursion follows the tree,
/// which is at most `RemoteJSON.maxDepth` deep.
package enum RemoteJSONDecoder {
    package static func decode<T: Decodable>(_ type: T.Type, from value: RemoteJSON) throws(DecodingError) -> T {
        do {
            return try T(from: RemoteJSONNodeDecoder(node: value, codingPath: []))
        } catch let error as DecodingError {
            throw error
        } catch {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "\(error)"))
        }
    }
}

extension RemoteJSON: Decodable {
    /// The value itself, through `RemoteJSONDecoder` only: another decoder has no literal text to give.
    package init(from decoder: any Decoder) throws {
        guard let node = decoder as? RemoteJSONNodeDecoder else {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: decoder.codingPath, debugDescription: "RemoteJSON is read through RemoteJSONDecoder"))
        }
        self = node.node
    }

    /// What the value is, for error messages: "a string", "an object" …
    package var kindName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

extension DecodingError {
    /// The error as one of beacond's messages: the field path in quotes and what it must be, as in
    /// `"snapshot.id" must be a string (found a number)`; `whole` names the top level ("the
    /// document", "the line"). A `dataCorrupted` error about the top level is a whole sentence.
    package func message(whole: String) -> String {
        func place(_ path: [any CodingKey]) -> String {
            guard !path.isEmpty else { return whole }
            var text = ""
            for key in path {
                if let index = key.intValue {
                    text += "[\(index)]"
                } else {
                    text += (text.isEmpty ? "" : ".") + TerminalText.escaped(key.stringValue)
                }
            }
            return "\"\(text)\""
        }
        switch self {
        case .dataCorrupted(let context) where context.codingPath.isEmpty:
            return context.debugDescription // a sentence about the whole
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
            return "\(place(context.codingPath)) \(context.debugDescription)"
        case .keyNotFound(let key, let context):
            return "\(place(context.codingPath + [key])) is missing"
        @unknown default:
            return "\(self)"
        }
    }
}

/// One node of the tree as a `Decoder`, and as its own single-value container.
package struct RemoteJSONNodeDecoder: Decoder, SingleValueDecodingContainer {
    let node: RemoteJSON
    package let codingPath: [any CodingKey]

    package init(node: RemoteJSON, codingPath: [any CodingKey]) {
        self.node = node
        self.codingPath = codingPath
    }
    package var userInfo: [CodingUserInfoKey: Any] { [:] }

    func mismatch(_ type: Any.Type, _ expected: String) -> DecodingError {
        let context = DecodingError.Context(
            codingPath: codingPath,
            debugDescription: "must be \(expected) (found \(node.kindName))")
        return node == .null ? .valueNotFound(type, context) : .typeMismatch(type, context)
    }

    package func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let members) = node else { throw mismatch([String: RemoteJSON].self, "an object") }
        return KeyedDecodingContainer(RemoteJSONObjectContainer<Key>(members: members, codingPath: codingPath))
    }

    package func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let elements) = node else { throw mismatch([RemoteJSON].self, "an array") }
        return RemoteJSONArrayContainer(elements: elements, codingPath: codingPath)
    }

    package func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    package func decodeNil() -> Bool { node == .null }

    package func decode(_ type: Bool.Type) throws -> Bool {
        guard case .bool(let value) = node else { throw mismatch(type, "a boolean") }
        return value
    }

    package func decode(_ type: String.Type) throws -> String {
        guard case .string(let value) = node else { throw mismatch(type, "a string") }
        return value
    }

    /// A number within a Double's range; `1e400` is refused, naming its literal.
    package func decode(_ type: Double.Type) throws -> Double {
        guard case .number(let literal) = node else { throw mismatch(type, "a number") }
        guard let value = Double(literal), value.isFinite else {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: codingPath, debugDescription: "is \(literal.prefix(64)), beyond a Double's range"))
        }
        return value
    }

    package func decode(_ type: Float.Type) throws -> Float {
        let value = Float(try decode(Double.self))
        guard value.isFinite else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: codingPath, debugDescription: "is beyond a Float's range"))
        }
        return value
    }

    /// An integer literal that fits `type`; `1.0` and `1e3` are not integers here.
    func integer<Integer: FixedWidthInteger>(_ type: Integer.Type) throws -> Integer {
        guard case .number(let literal) = node else { throw mismatch(type, "an integer") }
        guard let value = Integer(literal) else {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: codingPath,
                    debugDescription: "must be an integer in \(type)'s range (found \(literal.prefix(64)))"))
        }
        return value
    }

    package func decode(_ type: Int.Type) throws -> Int { try integer(type) }
    package func decode(_ type: Int8.Type) throws -> Int8 { try integer(type) }
    package func decode(_ type: Int16.Type) throws -> Int16 { try integer(type) }
    package func decode(_ type: Int32.Type) throws -> Int32 { try integer(type) }
    package func decode(_ type: Int64.Type) throws -> Int64 { try integer(type) }
    package func decode(_ type: UInt.Type) throws -> UInt { try integer(type) }
    package func decode(_ type: UInt8.Type) throws -> UInt8 { try integer(type) }
    package func decode(_ type: UInt16.Type) throws -> UInt16 { try integer(type) }
    package func decode(_ type: UInt32.Type) throws -> UInt32 { try integer(type) }
    package func decode(_ type: UInt64.Type) throws -> UInt64 { try integer(type) }
    package func decode<T: Decodable>(_ type: T.Type) throws -> T { try T(from: self) }
}

/// A key of an array element, for coding paths.
struct RemoteJSONIndexKey: CodingKey {
    let intValue: Int?
    var stringValue: String { "\(intValue ?? 0)" }
    init(intValue: Int) { self.intValue = intValue }
    init?(stringValue: String) { nil }
}

struct RemoteJSONObjectContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let members: [String: RemoteJSON]
    let codingPath: [any CodingKey]

    var allKeys: [Key] { members.keys.compactMap(Key.init(stringValue:)) }

    func contains(_ key: Key) -> Bool { members[key.stringValue] != nil }

    /// The member's decoder; a missing key is `keyNotFound`.
    func member(_ key: Key) throws -> RemoteJSONNodeDecoder {
        guard let node = members[key.stringValue] else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "is missing"))
        }
        return RemoteJSONNodeDecoder(node: node, codingPath: codingPath + [key])
    }

    func decodeNil(forKey key: Key) throws -> Bool { try member(key).decodeNil() }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try member(key).decode(type) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try member(key).decode(type) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try member(key).decode(type) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try member(key).decode(type) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try member(key).decode(type) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try member(key).decode(type) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try member(key).decode(type) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try member(key).decode(type) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try member(key).decode(type) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try member(key).decode(type) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try member(key).decode(type) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try member(key).decode(type) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try member(key).decode(type) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try member(key).decode(type) }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try member(key).decode(type) }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        try member(key).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try member(key).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        RemoteJSONNodeDecoder(node: members["super"] ?? .null, codingPath: codingPath)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        RemoteJSONNodeDecoder(node: members[key.stringValue] ?? .null, codingPath: codingPath + [key])
    }
}

struct RemoteJSONArrayContainer: UnkeyedDecodingContainer {
    let elements: [RemoteJSON]
    let codingPath: [any CodingKey]
    private(set) var currentIndex = 0

    init(elements: [RemoteJSON], codingPath: [any CodingKey]) {
        self.elements = elements
        self.codingPath = codingPath
    }

    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex >= elements.count }

    /// Decodes the next element with `body`, moving past it only when that succeeds (as
    /// `JSONDecoder` does, so a caller may try another type); past the end is `valueNotFound`.
    mutating func next<Value>(_ type: Any.Type, _ body: (RemoteJSONNodeDecoder) throws -> Value) throws -> Value {
        let path = codingPath + [RemoteJSONIndexKey(intValue: currentIndex)]
        guard currentIndex < elements.count else {
            throw DecodingError.valueNotFound(type, .init(codingPath: path, debugDescription: "is missing"))
        }
        let value = try body(RemoteJSONNodeDecoder(node: elements[currentIndex], codingPath: path))
        currentIndex += 1
        return value
    }

    mutating func decodeNil() throws -> Bool {
        guard currentIndex < elements.count, elements[currentIndex] == .null else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try next(type) { try $0.decode(type) } }
    mutating func decode(_ type: String.Type) throws -> String { try next(type) { try $0.decode(type) } }
    mutating func decode(_ type: Double.Type) throws -> Double { try next(type) { try $0.decode(type) } }
    mutating func decode(_ type: Float.Type) throws -> Float { try next(type) { try $0.decode(type) } }
    mutating func decode(_ type: Int.Type) throws -> Int { try next(type) { try $0.decode(type) } }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try next(type) { try $0.decode(type) } }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try next(type) { try $0.decode(type) } }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try next(type) { try $0.decode(type) } }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try next(type) { try $0.decode(type) } }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try next(type) { try $0.decode(type) } }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try next(type) { try $0.decode(type) } }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try next(type) { try $0.decode(type) } }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try next(type) { try $0.decode(type) } }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try next(type) { try $0.decode(type) } }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try next(type) { try $0.decode(type) } }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        try next(type) { try $0.container(keyedBy: type) }
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try next([RemoteJSON].self) { try $0.unkeyedContainer() }
    }

    mutating func superDecoder() throws -> any Decoder { try next(RemoteJSON.self) { $0 } }
}
