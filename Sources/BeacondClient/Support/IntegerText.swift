/// Integers as operators write them, in flags and in the config file: decimal or `0x` hex, with
/// an optional sign (`0x1234`, `-80`, `+3`).
package enum IntegerText {
    package static func parse<Value: FixedWidthInteger>(_ text: String, as _: Value.Type = Value.self) -> Value? {
        guard let (negative, digits, radix) = split(text) else { return nil }
        return Value(negative ? "-" + digits : String(digits), radix: radix)
    }

    /// Whether `text` is written as an integer, whatever its size: a nil `parse` then means out of range.
    package static func hasIntegerSyntax(_ text: String) -> Bool { split(text) != nil }

    private static func split(_ text: String) -> (negative: Bool, digits: Substring, radix: Int)? {
        var digits = Substring(text)
        var negative = false
        if digits.hasPrefix("-") {
            negative = true
            digits = digits.dropFirst()
        } else if digits.hasPrefix("+") {
            digits = digits.dropFirst()
        }
        var radix = 10
        if digits.lowercased().hasPrefix("0x") {
            radix = 16
            digits = digits.dropFirst(2)
        }
        let isDigit: (Unicode.Scalar) -> Bool =
            radix == 16
            ? { ("0"..."9").contains($0) || ("a"..."f").contains($0) || ("A"..."F").contains($0) }
            : { ("0"..."9").contains($0) }
        guard !digits.isEmpty, digits.unicodeScalars.allSatisfy(isDigit) else { return nil }
        return (negative, digits, radix)
    }
}

extension IntegerText {
    /// The value of one ASCII hex digit (`0`–`9`, `a`–`f`, `A`–`F`); nil for any other byte.
    package static func hexDigitValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

extension String {
    /// Left-padded with zeros to `width` characters (`"7".zeroPadded(to: 4)` is `"0007"`).
    package func zeroPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
