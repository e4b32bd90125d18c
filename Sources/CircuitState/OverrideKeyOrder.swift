extension OverrideKey {
    /// The order of `description` ("command @ AA:…", then "source 7 @ AA:…", then "zone 12 @ AA:…";
    /// the numbers compared as text, so "zone 1 @" < "zone 10 @" < "zone 2 @"; then the address) as
    /// integers, so that a sort builds no String per comparison. `OverrideKeyTests` checks it against the Strings.
    struct DescriptionOrder: Comparable {
        /// 0 for a command ("command @ …"), 1 for staff ("source …"), 2 for circuit ("zone …").
        private let kind: UInt8
        private let number: UInt64
        /// The address's upper-case fixed-width hex sorts as its value.
        private let address: UInt64

        init(_ key: OverrideKey) {
            switch key {
            case .command(let address):
                kind = 0
                number = 0
                self.address = address.rawValue
            case .staff(let sourceID, let address):
                kind = 1
                number = Self.textOrder(sourceID)
                self.address = address.rawValue
            case .circuit(let zone, let address):
                kind = 2
                number = Self.textOrder(UInt32(zone))
                self.address = address.rawValue
            }
        }

        static func < (lhs: Self, rhs: Self) -> Bool {
            (lhs.kind, lhs.number, lhs.address) < (rhs.kind, rhs.number, rhs.address)
        }

        /// Up to 10 decimal digits (a UInt32), most significant first, as base-11 digits 1...10
        /// followed by 0s: the 0s stand for the space after the number, which sorts before any digit.
        static func textOrder(_ value: UInt32) -> UInt64 {
            let value = UInt64(value)
            var digitCount = 1
            var divisor: UInt64 = 1
            while digitCount < 10, value / divisor >= 10 {
                digitCount += 1
                divisor *= 10
            }
            var order: UInt64 = 0
            for position in 0..<10 {
                var digit: UInt64 = 0
                if position < digitCount {
                    digit = value / divisor % 10 + 1
                    divisor /= 10
                }
                order = order * 11 + digit
            }
            return order
        }
    }
}
