/// Writes JSON into a byte buffer without Foundation: objects and arrays are
/// opened and closed explicitly, and commas are placed automatically.
package struct JSONWriter {
    package var bytes: [UInt8] = []
    /// Bit n - 1 set: the container at depth n (1...64) already holds an element.
    private var hasElement: UInt64 = 0
    /// The same for depths beyond 64 (index depth - 65); empty, and so never allocated, in practice.
    private var deepHasElement: [Bool] = []
    private var depth = 0
    private var afterKey = false

    package init(capacity: Int = 512) {
        bytes.reserveCapacity(capacity)
    }

    private mutating func separate() {
        if afterKey {
            afterKey = false
            return
        }
        guard depth > 0 else { return }
        let hadElement: Bool
        if depth <= 64 {
            let bit: UInt64 = 1 << UInt64(depth - 1)
            hadElement = hasElement & bit != 0
            hasElement |= bit
        } else {
            hadElement = deepHasElement[depth - 65]
            deepHasElement[depth - 65] = true
        }
        if hadElement { bytes.append(UInt8(ascii: ",")) }
    }

    private mutating func open(_ character: Unicode.Scalar) {
        separate()
        bytes.append(UInt8(ascii: character))
        depth += 1
        if depth <= 64 {
            hasElement &= ~(1 << UInt64(depth - 1))
        } else if deepHasElement.count < depth - 64 {
            deepHasElement.append(false)
        } else {
            deepHasElement[depth - 65] = false
        }
    }

    /// An unmatched close is written but leaves the depth at 0 (the caller's bug, not a trap).
    private mutating func close(_ character: Unicode.Scalar) {
        depth = max(0, depth - 1)
        bytes.append(UInt8(ascii: character))
    }

    package mutating func beginObject() { open("{") }
    package mutating func endObject() { close("}") }
    package mutating func beginArray() { open("[") }
    package mutating func endArray() { close("]") }

    /// A key written as is: a literal of beacond's, which needs no escaping.
    package mutating func key(_ name: StaticString) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        name.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
        afterKey = true
    }

    package mutating func key(_ name: String) {
        separate()
        appendEscaped(name)
        bytes.append(UInt8(ascii: ":"))
        afterKey = true
    }

    package mutating func null() {
        separate()
        bytes.append("null")
    }

    package mutating func bool(_ value: Bool) {
        separate()
        if value { bytes.append("true") } else { bytes.append("false") }
    }

    package mutating func int(_ value: some BinaryInteger) {
        separate()
        appendDecimal(value)
    }

    /// An optional integer, or null.
    package mutating func int(_ value: (some BinaryInteger)?) {
        if let value { int(value) } else { null() }
    }

    package mutating func string(_ value: String) {
        separate()
        appendEscaped(value)
    }

    /// A string, or null.
    package mutating func string(orNull value: String?) {
        if let value { string(value) } else { null() }
    }

    /// A string from raw bytes (a device name, say): invalid UTF-8 becomes U+FFFD.
    package mutating func string(bytes raw: UnsafeRawBufferPointer) {
        separate()
        bytes.appendJSONString(decoding: raw)
    }

    /// Lower-case hex of `raw`, as a string.
    package mutating func hex(_ raw: UnsafeRawBufferPointer) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        bytes.appendHexLower(raw)
        bytes.append(UInt8(ascii: "\""))
    }

    /// Unix microseconds as seconds with exactly six decimals.
    package mutating func seconds(micros: Int64) {
        separate()
        bytes.appendSeconds(micros: micros)
    }

    /// A Double with exactly `decimals` decimals (0...18; trailing zeros kept), or null when not
    /// finite or when `value` × 10^decimals is beyond ±2^63 (no such number is printed wrong).
    package mutating func number(_ value: Double, decimals requested: Int) {
        guard value.isFinite else { return null() }
        let decimals = min(max(requested, 0), 18) // 10^19 and beyond do not fit the scaled Int64
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        guard let scaled = Int64(exactly: (value * scale).rounded()) else { return null() }
        separate()
        if scaled < 0 { bytes.append(UInt8(ascii: "-")) }
        let magnitude = scaled.magnitude
        let unit = UInt64(scale)
        bytes.appendDecimal(magnitude: magnitude / unit)
        if decimals > 0 {
            bytes.append(UInt8(ascii: "."))
            bytes.appendZeroPadded(magnitude % unit, width: decimals)
        }
    }

    /// A Double in its shortest round-trip form (`21.5`, `1e-05`, at most 24 bytes), or null when
    /// not finite.
    package mutating func number(_ value: Double) {
        guard value.isFinite else { return null() }
        separate()
        bytes.append(contentsOf: value.description.utf8)
    }

    /// A value that `body` writes whole (already valid JSON), placed like any other value.
    package mutating func rawValue(_ body: (inout [UInt8]) -> Void) {
        separate()
        body(&bytes)
    }

    package mutating func newline() {
        bytes.append(UInt8(ascii: "\n"))
    }

    private mutating func appendDecimal(_ value: some BinaryInteger) {
        bytes.appendDecimal(value)
    }

    /// A JSON string, escaped as `ByteSink.appendJSONString` says (JSONEscaping.swift).
    private mutating func appendEscaped(_ text: String) {
        bytes.appendJSONString(text)
    }
}
