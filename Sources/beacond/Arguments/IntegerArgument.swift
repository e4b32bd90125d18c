import ArgumentParser
import BeacondCore

/// An integer option that takes decimal or `0x` hex, with an optional sign:
/// `--company-id 0x1234`, `--min-rssi -80`.
struct IntegerArgument<Value: FixedWidthInteger & Sendable>: ExpressibleByArgument, Sendable {
    var value: Value

    init(_ value: Value) { self.value = value }

    init?(argument: String) {
        guard let value = IntegerText.parse(argument, as: Value.self) else { return nil }
        self.value = value
    }

    var defaultValueDescription: String { String(value) }
}
