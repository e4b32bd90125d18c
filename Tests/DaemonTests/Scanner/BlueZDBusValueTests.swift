import BeacondTestSupport
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// The libdbus iterator wrappers, on messages built in memory (no bus needed).
@Suite struct BlueZDBusValueTests {
    static func message(_ arguments: [DBusValue]) throws -> DBusMessage {
        try DBusMessage.methodCall(
            destination: "org.example", path: "/org/example", interface: "org.example.Test",
            member: "Echo", arguments: arguments)
    }

    @Test func valuesRoundTrip() throws {
        let values: [DBusValue] = [
            .byte(7), .boolean(true), .int16(-60), .uint16(0x1234), .int32(-5), .uint32(5), .int64(-1 << 40),
            .uint64(1 << 40), .double(2.5), .string("héllo"), .objectPath("/org/bluez/hci0"), .signature("a{sv}"),
            .bytes([1, 2, 3]), .bytes([]),
            .array(element: "s", []),
            .array(element: "(yyay)", [.structure([.byte(0), .byte(0xFF), .bytes([0x34, 0x12])])]),
            .properties(["Transport": .string("le"), "DuplicateData": .boolean(true)]),
            .dictionary(key: "q", value: "v", [DBusDictEntry(key: .uint16(0x1234), value: .variant(.bytes([9])))]),
            .dictionary(key: "o", value: "a{sa{sv}}", []),
            .variant(.variant(.int16(3))),
        ]
        let message = try Self.message(values)
        var reader = message.reader
        #expect(try reader.values() == values)
        #expect(reader.isAtEnd)
    }

    @Test func signaturesDescribeValues() {
        #expect(DBusValue.properties([:]).signature == "a{sv}")
        #expect(DBusValue.array(element: "(yyay)", []).signature == "a(yyay)")
        #expect(DBusValue.structure([.byte(0), .bytes([])]).signature == "(yay)")
        #expect(DBusValue.dictionary(key: "o", value: "a{sa{sv}}", []).signature == "a{oa{sa{sv}}}")
    }

    @Test func writerRefusesWhatLibdbusWouldAbortOn() throws {
        #expect(throws: DBusEncodingError.self) { try Self.message([.objectPath("not/a/path")]) }
        #expect(throws: DBusEncodingError.self) { try Self.message([.string("nul\u{0}inside")]) }
        #expect(throws: DBusEncodingError.self) { try Self.message([.signature("a{")]) }
        #expect(throws: DBusEncodingError.self) { try Self.message([.array(element: "s", [.int16(1)])]) }
        #expect(throws: DBusEncodingError.self) { try Self.message([.array(element: "a{", [])]) }
        #expect(throws: DBusEncodingError.self) {
            try Self.message([
                .dictionary(key: "s", value: "v", [DBusDictEntry(key: .uint16(1), value: .variant(.byte(1)))])
            ])
        }
        #expect(throws: DBusEncodingError.self) { try Self.message([.structure([])]) }
        #expect(throws: DBusEncodingError.self) {
            try DBusMessage.methodCall(destination: "org.example", path: "/ok", interface: "bad interface", member: "M")
        }
        #expect(throws: DBusEncodingError.self) {
            try DBusMessage.methodCall(destination: "org.example", path: "/ok", interface: nil, member: "bad.member")
        }
    }

    @Test func mismatchesNameTheExpectedTypeTheSignatureAndThePosition() throws {
        let message = try Self.message([.string("org.bluez.Device1"), .properties(["RSSI": .string("loud")])])
        var reader = message.reader
        _ = try reader.string()
        var entries = try reader.enterArray(of: .dictEntry, expected: "a{sv}")
        var entry = try entries.enter(.dictEntry, expected: "{sv}")
        #expect(try entry.string() == "RSSI")
        var value = try entry.enter(.variant, expected: "v")
        #expect(throws: DBusDecodingError(expected: "n", found: "s", position: value.position)) { try value.int16() }
        #expect(value.position.description == "argument 1.0.1.0")
        // Past the end.
        #expect(throws: DBusDecodingError.self) { try reader.string() }
        let end = reader.mismatch(expected: "s")
        #expect(end.found == "end")
        #expect(end.description.contains("expected s at argument 2"))
    }

    @Test func readerNeverRecursesIntoTheWrongContainer() throws {
        let message = try Self.message([.int16(1), .bytes([1])])
        var reader = message.reader
        #expect(throws: DBusDecodingError.self) { try reader.enter(.array, expected: "ay") }
        _ = try reader.int16()
        // An `ay` is not an array of dictionary entries, and not a variant.
        #expect(throws: DBusDecodingError.self) { try reader.enterArray(of: .dictEntry, expected: "a{qv}") }
        #expect(throws: DBusDecodingError.self) { try reader.enter(.variant, expected: "v") }
        #expect(try reader.withBytes { Array($0) } == [1])
        #expect(reader.isAtEnd)
    }

    @Test func valueHelpersLookInsideVariantsAndDictionaries() {
        let value = DBusValue.variant(.properties(["Type": .string("or_patterns")]))
        #expect(value["Type"]?.text == "or_patterns")
        #expect(value["Missing"] == nil)
        #expect(DBusValue.bytes([1, 2]).elements == [.byte(1), .byte(2)])
    }
}
