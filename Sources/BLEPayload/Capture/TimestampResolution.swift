/// A pcapng `if_tsresol`: 10^-n or 2^-n seconds per unit (n from 0 to 127).
struct TimestampResolution: Hashable, CustomStringConvertible {
    var power: UInt8
    var binary: Bool

    static let microseconds = TimestampResolution(power: 6, binary: false)

    init(power: UInt8, binary: Bool) {
        self.power = power
        self.binary = binary
    }

    init(byte: UInt8) {
        power = byte & 0x7F
        binary = byte & 0x80 != 0
    }

    var description: String { binary ? "2^-\(power) s" : "10^-\(power) s" }

    /// Converts a timestamp in these units to microseconds, rounding down; nil when the result
    /// exceeds `Int64.max`. Exact for every resolution: the product is taken in 128 bits.
    func microseconds(_ stamp: UInt64) -> Int64? {
        let micros: UInt128
        if binary {
            // stamp × 10^6 < 2^84; a shift of 128 or more gives 0.
            micros = (UInt128(stamp) * 1_000_000) >> UInt128(power)
        } else if power <= 6 {
            micros = UInt128(stamp) * Self.powerOfTen(6 - Int(power))
        } else if power - 6 <= 38 {
            micros = UInt128(stamp) / Self.powerOfTen(Int(power) - 6)
        } else {
            micros = 0 // 10^-45 s and finer: any 64-bit count is far below a microsecond
        }
        guard micros <= UInt128(Int64.max) else { return nil }
        return Int64(micros)
    }

    /// 10^exponent for exponent in 0...38 (10^38 < 2^127), built once: the conversion runs per record.
    private static let powersOfTen: [UInt128] = {
        var powers: [UInt128] = [1]
        for _ in 1...38 { powers.append(powers[powers.count - 1] * 10) }
        return powers
    }()

    private static func powerOfTen(_ exponent: Int) -> UInt128 {
        powersOfTen[min(max(exponent, 0), powersOfTen.count - 1)]
    }
}
