import BLEPayload
import BeacondTestSupport
import Foundation
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// The hand-written formatting under the JSON and table output (issue 15): escaping, integers,
/// addresses and times, each against the String-based code it replaced (`LegacyJSONWriter`,
/// `String(_:)`, `BluetoothAddress.description`, `TimeFormat`) and against literal expectations.
@Suite struct ByteOutputTests {
    static func newJSON(_ body: (inout JSONWriter) -> Void) -> String {
        var writer = JSONWriter()
        body(&writer)
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    static func oldJSON(_ body: (inout LegacyJSONWriter) -> Void) -> String {
        var writer = LegacyJSONWriter()
        body(&writer)
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    /// What `body` writes through a `ByteCursor` (its own digit writing), or nil when it overflowed
    /// 24 bytes of room.
    static func throughCursor(_ body: (inout ByteCursor) -> Void) -> String? {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 24) { buffer -> String? in
            guard let start = buffer.baseAddress else { return nil }
            var cursor = ByteCursor(start: start, end: start + 24)
            body(&cursor)
            guard !cursor.overflowed else { return nil }
            return String(decoding: UnsafeBufferPointer(start: start, count: cursor.appendedCount), as: UTF8.self)
        }
    }

    @Test func aCursorWithNoRoomLeftWritesNothingAndSaysSo() {
        #expect(
            Self.throughCursor {
                $0.appendDecimal(UInt64.max); $0.appendDecimal(UInt64.max)
            } == nil)
        #expect(Self.throughCursor { $0.appendDecimal(magnitude: 1_000_000_000_000_000_000) } == "1000000000000000000")
        #expect(Self.throughCursor { $0.appendDecimal(magnitude: 9_999_999_999_999_999_999) } == "9999999999999999999")
        let twentyDigits = Self.throughCursor { $0.appendDecimal(magnitude: 10_000_000_000_000_000_000) }
        #expect(twentyDigits == "10000000000000000000")
    }

    @Test func escapingEdgeCasesAsLiterals() {
        let cases: [(String, String)] = [
            ("", #""""#),
            (#"a"b\c/d"#, #""a\"b\\c/d""#),
            ("\u{0}\u{1}\u{1F}\u{7F}", #""\u0000\u0001\u001f\u007f""#),
            ("\n\r\t\u{8}\u{C}", #""\n\r\t\u0008\u000c""#),
            ("\u{80}\u{85}\u{9F}\u{A0}é", "\"\\u0080\\u0085\\u009f\u{A0}é\""),
            (
                "\u{2027}\u{2028}\u{2029}\u{202A}\u{202E}\u{202F}",
                "\"\u{2027}\\u2028\\u2029\\u202a\\u202e\u{202F}\""
            ),
            ("\u{2065}\u{2066}\u{2069}\u{206A}—€✓", "\"\u{2065}\\u2066\\u2069\u{206A}—€✓\""),
            ("x\u{2028}", #""x\u2028""#),
            ("\u{2028}", #""\u2028""#),
            ("\u{85}", #""\u0085""#),
            ("🏁 ok", "\"🏁 ok\""),
            (String(repeating: "run ", count: 100) + "\"", "\"" + String(repeating: "run ", count: 100) + "\\\"\""),
        ]
        for (text, expected) in cases {
            #expect(Self.newJSON { $0.string(text) } == expected, "\(Array(text.unicodeScalars))")
            #expect(Self.oldJSON { $0.string(text) } == expected, "the oracle agrees")
        }
    }

    /// Raw bytes (a device name): invalid UTF-8 becomes U+FFFD exactly as `String(decoding:)` makes
    /// it, then is escaped; ASCII takes the fast path.
    @Test func invalidSequencesDecodeAsBeforeThenEscape() {
        let cases: [[UInt8]] = [
            [0x41, 0x80, 0x42], // a lone continuation byte
            [0xC3], // truncated two-byte sequence at the end
            [0xC0, 0x80], // overlong NUL
            [0xED, 0xA0, 0x80], // a surrogate
            [0xF5, 0x80, 0x80, 0x80], // beyond U+10FFFF
            [0xF0, 0x9F, 0x8F], // truncated four-byte sequence
            [0xE2, 0x80], // truncated E2 80 at the end: no escape
            [0xE2, 0x80, 0xA8, 0xE2], // U+2028 then a lone lead byte
            [0xC2], [0xC2, 0x85], [0xC2, 0xA0], // C1 lead byte alone, NEL, NBSP
            [0xFF, 0xFE, 0x00, 0x22, 0x5C],
            Array(0...0x7F), Array(0x80...0xFF), Array(0...0xFF),
        ]
        for bytes in cases {
            let new = bytes.withUnsafeBytes { raw in Self.newJSON { $0.string(bytes: raw) } }
            let old = bytes.withUnsafeBytes { raw in Self.oldJSON { $0.string(bytes: raw) } }
            #expect(new == old, "\(bytes)")
            #expect((try? JSONSerialization.jsonObject(with: Data(new.utf8), options: .fragmentsAllowed)) != nil)
        }
        let replaced = ([0x41, 0x80, 0x01] as [UInt8]).withUnsafeBytes { raw in Self.newJSON { $0.string(bytes: raw) } }
        #expect(replaced == "\"A\u{FFFD}\\u0001\"")
    }

    /// 20,000 random strings over an alphabet rich in the bytes that need a look.
    @Test func randomBytesEscapeAsBefore() {
        var generator = SplitMix64(seed: 0x15)
        let alphabet: [UInt8] = [
            0x00, 0x01, 0x09, 0x0A, 0x1F, 0x20, 0x22, 0x41, 0x5C, 0x7E, 0x7F, 0x80, 0x81, 0x9F,
            0xA0, 0xA6, 0xA8, 0xA9, 0xAE, 0xAF, 0xC2, 0xC3, 0xE2, 0xED, 0xF0, 0xFF,
        ]
        for _ in 0..<20_000 {
            let count = Int(generator.next() % 24)
            let bytes = (0..<count).map { _ in alphabet[Int(generator.next() % UInt64(alphabet.count))] }
            let new = bytes.withUnsafeBytes { raw in Self.newJSON { $0.string(bytes: raw) } }
            let old = bytes.withUnsafeBytes { raw in Self.oldJSON { $0.string(bytes: raw) } }
            #expect(new == old, "\(bytes)")
            let text = String(decoding: bytes, as: UTF8.self)
            #expect(Self.newJSON { $0.string(text) } == old)
        }
    }

    @Test func integersAtTheirExtremes() {
        func check<Value: BinaryInteger>(_ value: Value) {
            #expect(Self.newJSON { $0.int(value) } == String(value), "\(value)")
            var bytes: [UInt8] = []
            bytes.appendDecimal(value)
            #expect(String(decoding: bytes, as: UTF8.self) == String(value))
            #expect(Self.throughCursor { $0.appendDecimal(value) } == String(value))
        }
        for value: Int64 in [.min, .min + 1, -1_000_000, -10, -9, -1, 0, 1, 9, 10, 99, 100, .max - 1, .max] {
            check(value)
        }
        for value: UInt64 in [0, 9, 10, 1 << 63, .max - 1, .max] { check(value) }
        for value in Int8.min...Int8.max { check(value) }
        for value: Int32 in [.min, .max] { check(value) }
        for value: UInt16 in [0, .max] { check(value) }
        #expect(Self.newJSON { $0.int(Int?.none) } == "null")
        for (value, width) in [(0, 6), (7, 6), (999_999, 6), (5, 1), (123, 18)] as [(UInt64, Int)] {
            var bytes: [UInt8] = []
            bytes.appendZeroPadded(value, width: width)
            let digits = String(value)
            let expected = String(repeating: "0", count: width - digits.count) + digits
            #expect(String(decoding: bytes, as: UTF8.self) == expected)
            #expect(Self.throughCursor { $0.appendZeroPadded(value, width: width) } == expected)
        }
        for value: UInt64 in [0, 1, 0xF, 0x10, 0xFF, 0x1234, .max] {
            var bytes: [UInt8] = []
            bytes.appendHexLower(value)
            #expect(String(decoding: bytes, as: UTF8.self) == String(value, radix: 16))
        }
    }

    @Test func addressesAsBlueZPrintsThem() {
        var generator = SplitMix64(seed: 0xADD)
        var values: [UInt64] = [0, 1, 0xFFFF_FFFF_FFFF, 0x0123_4567_89AB, 0xA0B0_C0D0_E0F0, 0x8000_0000_0000]
        for _ in 0..<1000 { values.append(generator.next()) }
        for value in values {
            let address = BluetoothAddress(rawValue: value)
            var bytes: [UInt8] = []
            bytes.appendAddress(address.rawValue)
            #expect(String(decoding: bytes, as: UTF8.self) == address.description)
        }
    }

    @Test func timestampsNegativeZeroAndLarge() {
        var generator = SplitMix64(seed: 0x7135)
        var values: [Int64] = [
            .min, .min + 1, -1_000_001, -1_000_000, -999_999, -1, 0, 1, 999_999, 1_000_000, 1_612_150_079_789_053,
            253_402_300_799_999_999, 253_402_300_800_000_000, -62_167_219_200_000_000, -62_167_219_200_000_001,
            .max - 1, .max,
        ]
        for _ in 0..<2000 { values.append(Int64(bitPattern: generator.next()) >> Int64(generator.next() % 40)) }
        #expect(Self.newJSON { $0.seconds(micros: -1) } == "-0.000001")
        #expect(Self.newJSON { $0.seconds(micros: 0) } == "0.000000")
        #expect(Self.newJSON { $0.seconds(micros: .min) } == "-9223372036854.775808")
        var iso: [UInt8] = []
        iso.appendISO8601(micros: 253_402_300_800_000_000)
        #expect(String(decoding: iso, as: UTF8.self) == "+10000-01-01T00:00:00.000000Z")
        for micros in values {
            #expect(Self.newJSON { $0.seconds(micros: micros) } == Self.oldJSON { $0.seconds(micros: micros) })
            var bytes: [UInt8] = []
            bytes.appendISO8601(micros: micros)
            #expect(String(decoding: bytes, as: UTF8.self) == TimeFormat.iso8601(micros: micros, fractionDigits: 6))
        }
    }

    /// The writer's other values print as they did.
    @Test func numbersAndBooleansAsBefore() {
        let doubles: [Double] = [0, -0.0, 1.5, -21.25, 1e-5, 123_456.789, .nan, .infinity, 9.3e18, -9.3e18]
        for value in doubles {
            for decimals in [0, 1, 3, 6, 18, 25, -1] {
                #expect(
                    Self.newJSON { $0.number(value, decimals: decimals) }
                        == Self.oldJSON { $0.number(value, decimals: decimals) }, "\(value) \(decimals)")
            }
            #expect(Self.newJSON { $0.number(value) } == Self.oldJSON { $0.number(value) })
        }
        let document = { (writer: inout JSONWriter) in
            writer.beginObject()
            writer.key("a"); writer.bool(true)
            writer.key("b"); writer.bool(false)
            writer.key("c"); writer.null()
            writer.key("d"); ([0xDE, 0xAD] as [UInt8]).withUnsafeBytes { writer.hex($0) }
            writer.endObject()
        }
        #expect(Self.newJSON(document) == #"{"a":true,"b":false,"c":null,"d":"dead"}"#)
    }
}
