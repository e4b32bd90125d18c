/// A JSON value as the remote document parser reads it; `RemoteJSONDecoder` decodes Decodable
/// types from it (why not `JSONDecoder`: see there). Numbers keep their literal text and are
/// converted (and range-checked) only where a field is used, so an out-of-range number in a
/// field beacond ignores (`"temperature": 1e400`) does not reject the document.
package enum RemoteJSON: Hashable, Sendable {
    case null
    case bool(Bool)
    /// The literal as written, already checked against the JSON number grammar.
    case number(String)
    case string(String)
    case array([RemoteJSON])
    /// Keys are unique: a duplicate key at any depth is a parse error.
    case object([String: RemoteJSON])

    /// The deepest nesting of arrays and objects accepted; the venue document is one flat object.
    static let maxDepth = 32

    /// Parses one JSON text (RFC 8259): UTF-8 (a leading byte order mark is skipped), one value with
    /// optional whitespace around it, no duplicate keys, at most `maxDepth` levels.
    package static func parse(_ bytes: [UInt8]) throws(RemoteJSONError) -> RemoteJSON {
        var start = 0
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { start = 3 }
        try validateUTF8(bytes, from: start)
        var parser = RemoteJSONParser(bytes: bytes, index: start)
        parser.skipWhitespace()
        let value = try parser.value(depth: 0)
        parser.skipWhitespace()
        guard parser.index == bytes.count else { throw parser.error(.trailingContent) }
        return value
    }

    private static func validateUTF8(_ bytes: [UInt8], from start: Int) throws(RemoteJSONError) {
        var iterator = bytes[start...].makeIterator()
        var decoder = UTF8()
        var offset = start
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar): offset += UTF8.width(scalar)
            case .emptyInput: return
            case .error: throw RemoteJSONError(kind: .invalidUTF8, offset: offset)
            }
        }
    }
}

/// Why a body is not acceptable JSON, and the byte offset where that was found.
package struct RemoteJSONError: Error, Hashable, Sendable, CustomStringConvertible {
    enum Kind: Hashable, Sendable {
        case invalidUTF8
        case unexpectedEnd
        case unexpectedByte(UInt8)
        case invalidNumber
        case invalidEscape
        case controlCharacterInString
        case trailingContent
        case tooDeep
        /// The key, cut to 64 bytes.
        case duplicateKey(String)
    }

    var kind: Kind
    var offset: Int

    /// Valid JSON that beacond still refuses (ambiguous or too deep), as opposed to a syntax error.
    package var isWellFormed: Bool {
        switch kind {
        case .duplicateKey, .tooDeep: true
        default: false
        }
    }

    package var description: String {
        let what =
            switch kind {
            case .invalidUTF8: "invalid UTF-8"
            case .unexpectedEnd: "unexpected end of input"
            case .unexpectedByte(let byte):
                (0x21..<0x7F).contains(byte)
                    ? "unexpected \"\(Character(Unicode.Scalar(byte)))\""
                    : "unexpected byte 0x\(String(byte, radix: 16))"
            case .invalidNumber: "invalid number"
            case .invalidEscape: "invalid escape in a string"
            case .controlCharacterInString: "unescaped control character in a string"
            case .trailingContent: "content after the JSON value"
            case .tooDeep: "nested deeper than \(RemoteJSON.maxDepth) levels"
            case .duplicateKey(let key): "duplicate key \"\(TerminalText.escaped(key))\""
            }
        return "\(what) at byte \(offset)"
    }
}

/// A recursive-descent parser over validated UTF-8; recursion is bounded by `RemoteJSON.maxDepth`.
private struct RemoteJSONParser {
    let bytes: [UInt8]
    var index: Int

    func error(_ kind: RemoteJSONError.Kind, at offset: Int? = nil) -> RemoteJSONError {
        RemoteJSONError(kind: kind, offset: offset ?? index)
    }

    var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    mutating func skipWhitespace() {
        while let byte = current, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { index += 1 }
    }

    mutating func expect(_ literal: String, _ value: RemoteJSON) throws(RemoteJSONError) -> RemoteJSON {
        for expected in literal.utf8 {
            guard let byte = current else { throw error(.unexpectedEnd) }
            guard byte == expected else { throw error(.unexpectedByte(byte)) }
            index += 1
        }
        return value
    }

    mutating func value(depth: Int) throws(RemoteJSONError) -> RemoteJSON {
        guard let byte = current else { throw error(.unexpectedEnd) }
        switch byte {
        case UInt8(ascii: "{"): return try object(depth: depth + 1)
        case UInt8(ascii: "["): return try array(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): return try expect("true", .bool(true))
        case UInt8(ascii: "f"): return try expect("false", .bool(false))
        case UInt8(ascii: "n"): return try expect("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw error(.unexpectedByte(byte))
        }
    }

    mutating func object(depth: Int) throws(RemoteJSONError) -> RemoteJSON {
        guard depth <= RemoteJSON.maxDepth else { throw error(.tooDeep) }
        index += 1 // {
        var members: [String: RemoteJSON] = [:]
        skipWhitespace()
        if current == UInt8(ascii: "}") {
            index += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            let keyOffset = index
            guard let byte = current else { throw error(.unexpectedEnd) }
            guard byte == UInt8(ascii: "\"") else { throw error(.unexpectedByte(byte)) }
            let key = try string()
            guard members[key] == nil else {
                throw error(.duplicateKey(String(decoding: key.utf8.prefix(64), as: UTF8.self)), at: keyOffset)
            }
            skipWhitespace()
            guard let colon = current else { throw error(.unexpectedEnd) }
            guard colon == UInt8(ascii: ":") else { throw error(.unexpectedByte(colon)) }
            index += 1
            skipWhitespace()
            members[key] = try value(depth: depth)
            skipWhitespace()
            guard let next = current else { throw error(.unexpectedEnd) }
            index += 1
            if next == UInt8(ascii: "}") { return .object(members) }
            guard next == UInt8(ascii: ",") else { throw error(.unexpectedByte(next), at: index - 1) }
        }
    }

    mutating func array(depth: Int) throws(RemoteJSONError) -> RemoteJSON {
        guard depth <= RemoteJSON.maxDepth else { throw error(.tooDeep) }
        index += 1 // [
        var elements: [RemoteJSON] = []
        skipWhitespace()
        if current == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try value(depth: depth))
            skipWhitespace()
            guard let next = current else { throw error(.unexpectedEnd) }
            index += 1
            if next == UInt8(ascii: "]") { return .array(elements) }
            guard next == UInt8(ascii: ",") else { throw error(.unexpectedByte(next), at: index - 1) }
        }
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, kept as text.
    mutating func number() throws(RemoteJSONError) -> RemoteJSON {
        let start = index
        func isDigit(_ byte: UInt8?) -> Bool { byte.map { (0x30...0x39).contains($0) } ?? false }
        if current == UInt8(ascii: "-") { index += 1 }
        if current == UInt8(ascii: "0") {
            index += 1
        } else {
            guard isDigit(current) else { throw error(.invalidNumber, at: start) }
            while isDigit(current) { index += 1 }
        }
        if current == UInt8(ascii: ".") {
            index += 1
            guard isDigit(current) else { throw error(.invalidNumber, at: start) }
            while isDigit(current) { index += 1 }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            index += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
            guard isDigit(current) else { throw error(.invalidNumber, at: start) }
            while isDigit(current) { index += 1 }
        }
        return .number(String(decoding: bytes[start..<index], as: UTF8.self))
    }

    /// A string from its opening quote; the input is valid UTF-8, so only escapes need decoding.
    /// A `\u` escape of a lone surrogate becomes U+FFFD.
    mutating func string() throws(RemoteJSONError) -> String {
        index += 1 // "
        var text: [UInt8] = []
        while true {
            guard let byte = current else { throw error(.unexpectedEnd) }
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return String(decoding: text, as: UTF8.self)
            case UInt8(ascii: "\\"):
                let escapeOffset = index
                index += 1
                guard let escaped = current else { throw error(.unexpectedEnd) }
                index += 1
                switch escaped {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): text.append(escaped)
                case UInt8(ascii: "b"): text.append(0x08)
                case UInt8(ascii: "f"): text.append(0x0C)
                case UInt8(ascii: "n"): text.append(0x0A)
                case UInt8(ascii: "r"): text.append(0x0D)
                case UInt8(ascii: "t"): text.append(0x09)
                case UInt8(ascii: "u"): text.append(contentsOf: try unicodeEscape(at: escapeOffset).utf8)
                default: throw error(.invalidEscape, at: escapeOffset)
                }
            case 0..<0x20:
                throw error(.controlCharacterInString)
            default:
                text.append(byte)
                index += 1
            }
        }
    }

    /// The scalar of `\uXXXX` (or a surrogate pair `\uXXXX\uXXXX`), `index` being after the `u`.
    mutating func unicodeEscape(at escapeOffset: Int) throws(RemoteJSONError) -> String {
        let first = try hexQuad(escapeOffset)
        if (0xD800..<0xDC00).contains(first), index + 1 < bytes.count,
            bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
        {
            let save = index
            index += 2
            let second = try hexQuad(save)
            if (0xDC00..<0xE000).contains(second) {
                let value = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
                return String(Unicode.Scalar(value).map(Character.init) ?? "\u{FFFD}")
            }
            index = save // not a pair: the second escape is read on its own
        }
        return String(Unicode.Scalar(first).map(Character.init) ?? "\u{FFFD}")
    }

    mutating func hexQuad(_ escapeOffset: Int) throws(RemoteJSONError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let byte = current else { throw error(.unexpectedEnd) }
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw error(.invalidEscape, at: escapeOffset)
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }
}
