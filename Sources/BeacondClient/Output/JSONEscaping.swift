/// JSON strings for `ByteSink`s. Besides what JSON requires, C1 controls, the bidi controls
/// (U+202A–202E, U+2066–2069) and the line separators (U+2028, U+2029) are written as `\uXXXX`,
/// so JSON shown on a terminal cannot be driven or reordered by outside text (`TerminalText`);
/// the value decodes to the same string.
///
/// Table-driven: one lookup a byte finds the bytes that need a look; the runs between them are
/// copied whole.
extension ByteSink {
    mutating func appendJSONString(_ text: String) {
        var text = text
        text.withUTF8 { appendJSONString(validUTF8: UnsafeRawBufferPointer($0)) }
    }

    /// A string from raw bytes (a device name, say): invalid UTF-8 becomes U+FFFD, as
    /// `String(decoding:as:)` makes it. ASCII, the usual case, is escaped straight from `raw`.
    mutating func appendJSONString(decoding raw: UnsafeRawBufferPointer) {
        var isASCII = true
        for byte in raw where byte >= 0x80 {
            isASCII = false
            break
        }
        if isASCII {
            appendJSONString(validUTF8: raw)
        } else {
            appendJSONString(String(decoding: raw, as: UTF8.self))
        }
    }

    /// `text` must be valid UTF-8 (a `String`'s bytes, or ASCII).
    mutating func appendJSONString(validUTF8 text: UnsafeRawBufferPointer) {
        appendByte(UInt8(ascii: "\""))
        jsonByteClasses.withUnsafeBufferPointer { classes in
            let count = text.count
            var runStart = 0
            var index = 0
            while index < count {
                let byte = text[index]
                let byteClass = classes[Int(byte)]
                if byteClass == JSONByteClass.plain {
                    index += 1
                    continue
                }
                if runStart < index { appendBytes(UnsafeRawBufferPointer(rebasing: text[runStart..<index])) }
                index += 1
                switch byteClass {
                case JSONByteClass.escaped:
                    appendEscapedASCII(byte)
                case JSONByteClass.leadC2:
                    // U+0080–009F: C2 80 … C2 9F.
                    if index < count, (0x80...0x9F).contains(text[index]) {
                        appendUnicodeEscape(UInt16(text[index]))
                        index += 1
                    } else {
                        appendByte(byte)
                    }
                default: // JSONByteClass.leadE2
                    // U+2028–202E and U+2066–2069: E2 80 A8 … E2 80 AE, E2 81 A6 … E2 81 A9.
                    if index + 1 < count {
                        let scalar = 0x2000 | UInt16(text[index] & 0x3F) << 6 | UInt16(text[index + 1] & 0x3F)
                        if (0x80...0x81).contains(text[index]),
                            (0x2028...0x202E).contains(scalar) || (0x2066...0x2069).contains(scalar)
                        {
                            appendUnicodeEscape(scalar)
                            index += 2
                        } else {
                            appendByte(byte)
                        }
                    } else {
                        appendByte(byte)
                    }
                }
                runStart = index
            }
            if runStart < count { appendBytes(UnsafeRawBufferPointer(rebasing: text[runStart..<count])) }
        }
        appendByte(UInt8(ascii: "\""))
    }

    private mutating func appendEscapedASCII(_ byte: UInt8) {
        switch byte {
        case UInt8(ascii: "\""): append("\\\"")
        case UInt8(ascii: "\\"): append("\\\\")
        case UInt8(ascii: "\n"): append("\\n")
        case UInt8(ascii: "\r"): append("\\r")
        case UInt8(ascii: "\t"): append("\\t")
        default: appendUnicodeEscape(UInt16(byte))
        }
    }

    /// `\u` and four lower-case hex digits.
    mutating func appendUnicodeEscape(_ value: UInt16) {
        append("\\u")
        appendByte(hexDigitLower(UInt8(truncatingIfNeeded: value >> 12) & 0xF))
        appendByte(hexDigitLower(UInt8(truncatingIfNeeded: value >> 8) & 0xF))
        appendByte(hexDigitLower(UInt8(truncatingIfNeeded: value >> 4) & 0xF))
        appendByte(hexDigitLower(UInt8(truncatingIfNeeded: value) & 0xF))
    }
}

enum JSONByteClass {
    /// Copied as it is.
    static let plain: UInt8 = 0
    /// `"`, `\`, C0 controls and DEL: always escaped.
    static let escaped: UInt8 = 1
    /// The lead byte of U+0080–00BF: a C1 control when the next byte is 80–9F.
    static let leadC2: UInt8 = 2
    /// The lead byte of U+2000–2FFF: the bidi controls and line separators are among them.
    static let leadE2: UInt8 = 3
}

/// `JSONByteClass` of each byte value.
let jsonByteClasses: [UInt8] = (0...255).map { (byte: Int) -> UInt8 in
    switch byte {
    case 0..<0x20, 0x22, 0x5C, 0x7F: JSONByteClass.escaped
    case 0xC2: JSONByteClass.leadC2
    case 0xE2: JSONByteClass.leadE2
    default: JSONByteClass.plain
    }
}
