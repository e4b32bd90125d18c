import ArgumentParser
import CircuitState

extension Policy: ExpressibleByArgument {}

/// A duration in seconds, with up to six decimals (`15`, `2.5`), held as integer microseconds.
struct SecondsArgument: ExpressibleByArgument, Sendable {
    var micros: Int64

    init(micros: Int64) { self.micros = micros }

    init?(argument: String) {
        guard let micros = Self.parse(argument) else { return nil }
        self.micros = micros
    }

    /// Parses a non-negative decimal number of seconds without going through Double,
    /// so `0.000001` is exactly one microsecond.
    static func parse(_ text: String) -> Int64? {
        let parts = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard let whole = parts.first, !whole.isEmpty || parts.count == 2,
              whole.allSatisfy(\.isASCII), whole.allSatisfy(\.isNumber) else { return nil }
        let seconds = whole.isEmpty ? 0 : Int64(whole)
        guard let seconds, seconds <= Int64.max / 1_000_000 else { return nil }
        var fraction: Int64 = 0
        if parts.count == 2 {
            let digits = parts[1]
            guard !digits.isEmpty, digits.count <= 6, digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber),
                  let value = Int64(digits) else { return nil }
            fraction = value
            for _ in digits.count..<6 { fraction *= 10 }
        }
        return seconds * 1_000_000 + fraction
    }

    var defaultValueDescription: String {
        let fraction = micros % 1_000_000
        return fraction == 0 ? "\(micros / 1_000_000)" : "\(Double(micros) / 1_000_000)"
    }
}

/// A comma-separated list of zone numbers: `1,2,7`.
struct ZoneListArgument: ExpressibleByArgument, Sendable {
    var zones: Set<UInt16>

    init?(argument: String) {
        var zones = Set<UInt16>()
        for part in argument.split(separator: ",", omittingEmptySubsequences: false) {
            guard let zone = IntegerArgument<UInt16>.parse(part.trimmingCharacters(in: " ")) else { return nil }
            zones.insert(zone)
        }
        self.zones = zones
    }
}

extension Substring {
    func trimmingCharacters(in character: Character) -> String {
        String(drop { $0 == character }.reversed().drop { $0 == character }.reversed())
    }
}
