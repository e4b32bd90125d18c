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
