/// Where formatted output bytes go: a growable `[UInt8]` (`JSONWriter`) or a `ByteCursor` over an
/// `OutputStream`'s buffer (replay and scan output). The formatting below is written once for
/// both, so the socket's JSON and the report lines escape and print numbers the same way.
///
/// No per-field `String`: integers, hex, addresses and times are formatted by hand into the sink.
protocol ByteSink {
    mutating func appendByte(_ byte: UInt8)
    mutating func appendBytes(_ raw: UnsafeRawBufferPointer)
    /// `value` in decimal (a default through a small buffer; `ByteCursor` writes the digits in place).
    mutating func appendDecimal(magnitude value: UInt64)
    /// `value` (< 10^width) with leading zeros to exactly `width` digits (1...19).
    mutating func appendZeroPadded(_ value: UInt64, width: Int)
    /// Bytes appended so far (for padding table columns).
    var appendedCount: Int { get }
}

extension Array: ByteSink where Element == UInt8 {
    @inline(__always) mutating func appendByte(_ byte: UInt8) { append(byte) }
    @inline(__always) mutating func appendBytes(_ raw: UnsafeRawBufferPointer) { append(contentsOf: raw) }
    var appendedCount: Int { count }
}

/// Writes into memory an `OutputStream` lends (`OutputStream.cursor(reserving:)`), checking the
/// end with one compare per append. Past the end nothing is written and `overflowed` is set:
/// `OutputStream.commit(_:)` then refuses the piece, and the caller writes it again with more room.
struct ByteCursor: ByteSink {
    let start: UnsafeMutablePointer<UInt8>
    private(set) var position: UnsafeMutablePointer<UInt8>
    let end: UnsafeMutablePointer<UInt8>
    private(set) var overflowed = false

    init(start: UnsafeMutablePointer<UInt8>, end: UnsafeMutablePointer<UInt8>) {
        self.start = start
        self.position = start
        self.end = end
    }

    var capacity: Int { end - start }
    var appendedCount: Int { position - start }

    @inline(__always) mutating func appendByte(_ byte: UInt8) {
        guard position < end else {
            overflowed = true
            return
        }
        position.pointee = byte
        position += 1
    }

    @inline(__always) mutating func appendBytes(_ raw: UnsafeRawBufferPointer) {
        guard raw.count <= end - position else {
            overflowed = true
            return
        }
        if let base = raw.baseAddress {
            UnsafeMutableRawPointer(position).copyMemory(from: base, byteCount: raw.count)
            position += raw.count
        }
    }

    mutating func appendDecimal(magnitude value: UInt64) {
        var digits = 1
        var threshold: UInt64 = 10
        while value >= threshold {
            digits += 1
            if digits == 20 { break }
            threshold &*= 10
        }
        writeDigits(value, count: digits)
    }

    mutating func appendZeroPadded(_ value: UInt64, width: Int) {
        writeDigits(value, count: width)
    }

    /// The last `count` decimal digits of `value`, written in place from the right.
    @inline(__always) private mutating func writeDigits(_ value: UInt64, count: Int) {
        guard count <= end - position else {
            overflowed = true
            return
        }
        var rest = value
        var digit = position + count
        while digit > position {
            digit -= 1
            digit.pointee = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest % 10)
            rest /= 10
        }
        position += count
    }
}

extension ByteSink {
    @inline(__always) mutating func append(_ literal: StaticString) {
        // withUTF8Buffer, not utf8Start: a one-scalar literal ("…") may be stored as a scalar.
        literal.withUTF8Buffer { appendBytes(UnsafeRawBufferPointer($0)) }
    }

    /// `value` in decimal, with a `-` when negative; every value of every width, `Int64.min` included.
    @inline(__always) mutating func appendDecimal(_ value: some BinaryInteger) {
        if value < 0 {
            appendByte(UInt8(ascii: "-"))
            appendDecimal(magnitude: UInt64(truncatingIfNeeded: 0 &- Int64(truncatingIfNeeded: value)))
        } else {
            appendDecimal(magnitude: UInt64(truncatingIfNeeded: value))
        }
    }

    mutating func appendDecimal(magnitude value: UInt64) {
        if value < 10 {
            appendByte(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value))
            return
        }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var index = 20
            var rest = value
            while rest != 0 {
                index -= 1
                digits[index] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest % 10)
                rest /= 10
            }
            appendBytes(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: digits[index...])))
        }
    }

    /// `value` (< 10^width) with leading zeros to exactly `width` digits (1...19).
    mutating func appendZeroPadded(_ value: UInt64, width: Int) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var rest = value
            var index = width
            while index > 0 {
                index -= 1
                digits[index] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest % 10)
                rest /= 10
            }
            appendBytes(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: digits[0..<width])))
        }
    }

    /// Unix microseconds as seconds with exactly six decimals: `-0.000001`, `1612150079.789053`.
    mutating func appendSeconds(micros: Int64) {
        if micros < 0 { appendByte(UInt8(ascii: "-")) }
        let magnitude = micros.magnitude
        appendDecimal(magnitude: magnitude / 1_000_000)
        appendByte(UInt8(ascii: "."))
        appendZeroPadded(magnitude % 1_000_000, width: 6)
    }

    /// Lower-case hex of `raw`, two digits a byte, no separators.
    mutating func appendHexLower(_ raw: UnsafeRawBufferPointer) {
        for byte in raw {
            appendByte(hexDigitLower(byte >> 4))
            appendByte(hexDigitLower(byte & 0xF))
        }
    }

    /// Lower-case hex of `value` without leading zeros (`0`, `ff`, `1234`).
    mutating func appendHexLower(_ value: UInt64) {
        var shift = 60
        while shift > 0 && value >> UInt64(shift) == 0 { shift -= 4 }
        while shift >= 0 {
            appendByte(hexDigitLower(UInt8(truncatingIfNeeded: value >> UInt64(shift)) & 0xF))
            shift -= 4
        }
    }

    /// Upper-case `AA:BB:CC:DD:EE:FF`, as `BluetoothAddress.description` prints it.
    mutating func appendAddress(_ rawValue: UInt64) {
        var shift: UInt64 = 40
        while true {
            let byte = UInt8(truncatingIfNeeded: rawValue >> shift)
            appendByte(hexDigitUpper(byte >> 4))
            appendByte(hexDigitUpper(byte & 0xF))
            if shift == 0 { return }
            appendByte(UInt8(ascii: ":"))
            shift -= 8
        }
    }

    /// `count` spaces.
    mutating func appendSpaces(_ count: Int) {
        var left = count
        while left > 0 {
            appendByte(UInt8(ascii: " "))
            left -= 1
        }
    }
}

@inline(__always) func hexDigitLower(_ nibble: UInt8) -> UInt8 {
    nibble < 10 ? UInt8(ascii: "0") &+ nibble : UInt8(ascii: "a") &+ (nibble &- 10)
}

@inline(__always) func hexDigitUpper(_ nibble: UInt8) -> UInt8 {
    nibble < 10 ? UInt8(ascii: "0") &+ nibble : UInt8(ascii: "A") &+ (nibble &- 10)
}
