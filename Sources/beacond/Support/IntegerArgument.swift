import ArgumentParser

/// An integer option that takes decimal or `0x` hex, with an optional sign:
/// `--company-id 0x1234`, `--min-rssi -80`.
struct IntegerArgument<Value: FixedWidthInteger & Sendable>: ExpressibleByArgument, Sendable {
    var value: Value

    init(_ value: Value) { self.value = value }

    init?(argument: String) {
        guard let value = Self.parse(argument) else { return nil }
        self.value = value
    }

    static func parse(_ text: String) -> Value? {
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
        guard !digits.isEmpty, digits.allSatisfy({ $0.isHexDigit }) else { return nil }
        return Value(negative ? "-" + digits : String(digits), radix: radix)
    }

    var defaultValueDescription: String { String(value) }
}
