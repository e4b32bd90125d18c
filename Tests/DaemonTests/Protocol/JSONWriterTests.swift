import Foundation
import Testing

@testable import BeacondClient
@testable import BeacondCore

@Suite struct JSONWriterTests {
    func written(_ body: (inout JSONWriter) -> Void) -> String {
        var writer = JSONWriter()
        body(&writer)
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    func stringValue(_ text: String) -> String { written { $0.string(text) } }

    @Test func quotesAndBackslashesAreEscapedAndSlashIsNot() throws {
        #expect(stringValue(#"say "hi" \ now / then"#) == #""say \"hi\" \\ now / then""#)
        #expect(stringValue("") == #""""#)
        #expect(written { $0.string(orNull: nil) } == "null")
        let json = Data(stringValue(#"\"\\"#).utf8)
        let decoded = try JSONSerialization.jsonObject(with: json, options: .fragmentsAllowed)
        #expect(decoded as? String == #"\"\\"#)
    }

    @Test func everyControlCharacterIsEscaped() throws {
        for value in 0..<0x20 {
            let scalar = try #require(Unicode.Scalar(value))
            let expected =
                switch value {
                case 0x0A: #"\n"#
                case 0x0D: #"\r"#
                case 0x09: #"\t"#
                default: String(format: "\\u%04x", value)
                }
            let json = stringValue("a\(Character(scalar))b")
            #expect(json == "\"a\(expected)b\"", "U+\(String(value, radix: 16))")
            #expect(!json.utf8.contains { $0 < 0x20 })
            let decoded = try JSONSerialization.jsonObject(with: Data(json.utf8), options: .fragmentsAllowed)
            #expect(decoded as? String == "a\(Character(scalar))b")
        }
        #expect(stringValue("\u{7F}") == #""\u007f""#)
        #expect(stringValue("\u{80}\u{9F}\u{A0}") == "\"\\u0080\\u009f\u{A0}\"")
    }

    @Test func lineSeparatorsAndBidiControlsAreEscapedOthersNearThemAreNot() {
        #expect(stringValue("\u{2028}\u{2029}") == #""\u2028\u2029""#)
        #expect(stringValue("\u{202A}\u{202E}\u{2066}\u{2069}") == #""\u202a\u202e\u2066\u2069""#)
        // Neighbours with the same lead byte (E2 80 / E2 81) pass through as UTF-8.
        #expect(stringValue("\u{2027}\u{202F}\u{2065}\u{206A}—€") == "\"\u{2027}\u{202F}\u{2065}\u{206A}—€\"")
        #expect(stringValue("x\u{2028}") == #""x\u2028""#) // at the very end of the text
    }

    @Test func keysAreEscapedLikeStrings() {
        let json = written {
            $0.beginObject()
            $0.key("a\"b\u{1}" as String); $0.int(1)
            $0.key("plain"); $0.int(2)
            $0.endObject()
        }
        #expect(json == #"{"a\"b\u0001":1,"plain":2}"#)
    }

    @Test func invalidUTF8BytesBecomeReplacementCharacters() {
        let raw: [UInt8] = [0x41, 0xFF, 0xC3, 0x28, 0xED, 0xA0, 0x80, 0x42]
        let json = raw.withUnsafeBytes { buffer in written { $0.string(bytes: buffer) } }
        #expect(
            json.utf8.elementsEqual(
                [0x22, 0x41, 0xEF, 0xBF, 0xBD, 0xEF, 0xBF, 0xBD, 0x28]
                    + Array(repeating: [0xEF, 0xBF, 0xBD], count: 3)
                    .flatMap { $0 } + [0x42, 0x22]))
        #expect(!json.utf8.contains(0xFF))
        #expect(String(validating: Array(json.utf8), as: UTF8.self) != nil)
    }

    @Test func integersAtTheirLimits() {
        #expect(written { $0.int(Int64.min) } == "-9223372036854775808")
        #expect(written { $0.int(Int64.max) } == "9223372036854775807")
        #expect(written { $0.int(UInt64.max) } == "18446744073709551615")
        #expect(written { $0.int(0) } == "0")
        #expect(written { $0.int(-42) } == "-42")
        #expect(written { $0.int(Int?.none) } == "null")
    }

    @Test func doublesInShortestFormAndNonFiniteAsNull() throws {
        let cases: [(Double, String)] = [
            (0, "0.0"), (-0.0, "-0.0"), (21.5, "21.5"), (-3.75, "-3.75"), (1e-5, "1e-05"),
            (.leastNonzeroMagnitude, "5e-324"), (.greatestFiniteMagnitude, "1.7976931348623157e+308"),
            (.nan, "null"), (.infinity, "null"), (-.infinity, "null"), (.signalingNaN, "null"),
        ]
        for (value, expected) in cases {
            let json = written { $0.number(value) }
            #expect(json == expected, "\(value)")
            if value.isFinite {
                let decoded = try JSONSerialization.jsonObject(with: Data(json.utf8), options: .fragmentsAllowed)
                #expect((decoded as? NSNumber)?.doubleValue == value, "\(json)")
            }
        }
    }

    @Test func fixedDecimalsRoundAndRefuseWhatTheyCannotPrint() {
        #expect(written { $0.number(1.23456, decimals: 3) } == "1.235")
        #expect(written { $0.number(-0.0004, decimals: 3) } == "0.000") // no "-0.000"
        #expect(written { $0.number(-0.0006, decimals: 3) } == "-0.001")
        #expect(written { $0.number(2, decimals: 0) } == "2")
        #expect(written { $0.number(.nan, decimals: 2) } == "null")
        #expect(written { $0.number(-.infinity, decimals: 2) } == "null")
        #expect(written { $0.number(1e17, decimals: 3) } == "null") // beyond ±2^63 once scaled
        // Out-of-range decimals are clamped to 0...18 rather than trapping.
        #expect(written { $0.number(1.5, decimals: -3) } == "2")
        #expect(written { $0.number(0.5, decimals: 40) } == "0.500000000000000000")
    }

    @Test func secondsFromMicrosHaveSixDecimals() {
        #expect(written { $0.seconds(micros: 0) } == "0.000000")
        #expect(written { $0.seconds(micros: 1) } == "0.000001")
        #expect(written { $0.seconds(micros: -1) } == "-0.000001")
        #expect(written { $0.seconds(micros: 1_747_396_810_123_456) } == "1747396810.123456")
        #expect(written { $0.seconds(micros: .min) } == "-9223372036854.775808")
        #expect(written { $0.seconds(micros: .max) } == "9223372036854.775807")
    }

    @Test func commasAtEveryDepthEvenBeyondSixtyFour() throws {
        #expect(
            written {
                $0.beginObject()
                $0.key("a"); $0.beginArray(); $0.int(1); $0.beginArray(); $0.endArray(); $0.bool(true); $0.endArray()
                $0.key("b"); $0.beginObject(); $0.endObject()
                $0.key("c"); $0.null()
                $0.endObject()
            } == #"{"a":[1,[],true],"b":{},"c":null}"#)
        // 100 levels, each holding an empty array, the next level and a number: valid JSON at every
        // depth (levels beyond 64 once shared one bit, and lost the comma after an empty array).
        let json = written {
            for _ in 0..<100 { $0.beginArray(); $0.beginArray(); $0.endArray() }
            for _ in 0..<100 { $0.int(7); $0.endArray() }
        }
        let expected = "[[]" + String(repeating: ",[[]", count: 99) + String(repeating: ",7]", count: 100)
        #expect(json == expected)
        #expect(try JSONSerialization.jsonObject(with: Data(json.utf8)) is [Any])
        // Unbalanced closes are the caller's bug: written, never a trap.
        #expect(
            written {
                $0.endArray(); $0.endArray(); $0.beginArray(); $0.int(1); $0.int(2); $0.endArray()
            }
                == "]][1,2]")
    }

    @Test func hexIsLowerCase() {
        let raw: [UInt8] = [0x00, 0xAB, 0x7F, 0xFF]
        #expect(raw.withUnsafeBytes { buffer in written { $0.hex(buffer) } } == #""00ab7fff""#)
    }
}
