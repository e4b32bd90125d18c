import CBlueZ

/// Reads a message's arguments with libdbus's iterator API.
///
/// Every read checks the type first (libdbus aborts the process on a mismatched recurse or
/// fixed-array read) and consumes the value, so a loop over a container can skip what it does
/// not want with `skip()`. Mismatches throw a `DBusDecodingError` naming the expected type, the
/// signature found and the position. Strings and byte arrays borrowed through the `with…` reads
/// live as long as the message, which must outlive the reader.
package struct DBusMessageReader {
    private var iter = DBusMessageIter()
    private var atEnd: Bool
    private(set) var position: DBusPosition

    init(message: OpaquePointer) {
        atEnd = dbus_message_iter_init(message, &iter) == 0
        position = .firstArgument
    }

    private init(child: DBusMessageIter, position: DBusPosition) {
        iter = child
        self.position = position
        var copy = child
        atEnd = dbus_message_iter_get_arg_type(&copy) == DBusTypeCode.invalid.rawValue
    }

    /// The type of the current value; `.invalid` past the last one.
    var type: DBusTypeCode {
        guard !atEnd else { return .invalid }
        var copy = iter
        return DBusTypeCode(rawValue: dbus_message_iter_get_arg_type(&copy))
    }

    var isAtEnd: Bool { type == .invalid }

    /// For an array, the type of its elements; `.invalid` otherwise.
    var elementType: DBusTypeCode {
        guard type == .array else { return .invalid }
        var copy = iter
        return DBusTypeCode(rawValue: dbus_message_iter_get_element_type(&copy))
    }

    /// The full signature of the current value ("end" past the last one). Allocates: for
    /// messages and tests, not for the per-advertisement path.
    var signature: String {
        guard !isAtEnd else { return "end" }
        var copy = iter
        guard let raw = dbus_message_iter_get_signature(&copy) else { return "?" }
        defer { dbus_free(raw) }
        return String(cString: raw)
    }

    func mismatch(expected: String) -> DBusDecodingError {
        DBusDecodingError(expected: expected, found: signature, position: position)
    }

    /// Moves past the current value, whatever it is.
    mutating func skip() {
        guard !isAtEnd else { return }
        if dbus_message_iter_next(&iter) == 0 { atEnd = true }
        position.index += 1
    }

    /// Fails unless every value has been read.
    func expectEnd() throws(DBusDecodingError) {
        guard isAtEnd else { throw mismatch(expected: "the end of the arguments") }
    }

    // MARK: Containers

    /// Enters the container here (checked to be `container`) and moves past it. `expected`
    /// names the whole expected type for errors, for example "a{sv}".
    mutating func enter(_ container: DBusTypeCode, expected: String) throws(DBusDecodingError) -> DBusMessageReader {
        guard type == container,
            container == .array || container == .variant || container == .structure || container == .dictEntry
        else { throw mismatch(expected: expected) }
        var sub = DBusMessageIter()
        dbus_message_iter_recurse(&iter, &sub)
        let child = DBusMessageReader(child: sub, position: position.child)
        skip()
        return child
    }

    /// Enters an array whose elements are `element`.
    mutating func enterArray(of element: DBusTypeCode, expected: String) throws(DBusDecodingError) -> DBusMessageReader
    {
        guard elementType == element else { throw mismatch(expected: expected) }
        return try enter(.array, expected: expected)
    }

    // MARK: Basic values

    private mutating func basic(_ code: DBusTypeCode, expected: String) throws(DBusDecodingError) -> DBusBasicValue {
        guard type == code else { throw mismatch(expected: expected) }
        var value = DBusBasicValue()
        dbus_message_iter_get_basic(&iter, &value)
        skip()
        return value
    }

    mutating func byte() throws(DBusDecodingError) -> UInt8 { try basic(.byte, expected: "y").byt }
    mutating func boolean() throws(DBusDecodingError) -> Bool { try basic(.boolean, expected: "b").bool_val != 0 }
    mutating func int16() throws(DBusDecodingError) -> Int16 { try basic(.int16, expected: "n").i16 }
    mutating func uint16() throws(DBusDecodingError) -> UInt16 { try basic(.uint16, expected: "q").u16 }
    mutating func int32() throws(DBusDecodingError) -> Int32 { try basic(.int32, expected: "i").i32 }
    mutating func uint32() throws(DBusDecodingError) -> UInt32 { try basic(.uint32, expected: "u").u32 }

    /// Borrows the string, object path or signature here (checked to be `code`) and moves past it.
    mutating func withCString<R>(
        _ code: DBusTypeCode = .string, _ body: (UnsafePointer<CChar>) throws(DBusDecodingError) -> R
    ) throws(DBusDecodingError) -> R {
        guard type == code, code.isStringLike, let text = beacond_dbus_get_string(&iter) else {
            throw mismatch(expected: code.description)
        }
        let result = try body(text)
        skip()
        return result
    }

    mutating func string() throws(DBusDecodingError) -> String { try withCString(.string) { String(cString: $0) } }
    mutating func objectPath() throws(DBusDecodingError) -> String {
        try withCString(.objectPath) { String(cString: $0) }
    }

    /// Borrows the bytes of the `ay` here and moves past it.
    mutating func withBytes<R>(
        expected: String = "ay", _ body: (UnsafeRawBufferPointer) throws(DBusDecodingError) -> R
    ) throws(DBusDecodingError) -> R {
        var array = try enterArray(of: .byte, expected: expected)
        var count: Int32 = 0
        let base = beacond_dbus_get_bytes(&array.iter, &count)
        return try body(UnsafeRawBufferPointer(start: base, count: base == nil ? 0 : Int(count)))
    }

    // MARK: Any value

    /// Reads the value here, whatever its type, and moves past it. Unix file descriptors (never
    /// negotiated on these connections) are refused.
    mutating func value() throws(DBusDecodingError) -> DBusValue {
        let code = type
        switch code {
        case .byte: return .byte(try byte())
        case .boolean: return .boolean(try boolean())
        case .int16: return .int16(try int16())
        case .uint16: return .uint16(try uint16())
        case .int32: return .int32(try int32())
        case .uint32: return .uint32(try uint32())
        case .int64: return .int64(Int64(try basic(.int64, expected: "x").i64))
        case .uint64: return .uint64(UInt64(try basic(.uint64, expected: "t").u64))
        case .double: return .double(try basic(.double, expected: "d").dbl)
        case .string: return .string(try string())
        case .objectPath: return .objectPath(try objectPath())
        case .signature: return .signature(try withCString(.signature) { String(cString: $0) })
        case .variant:
            var inner = try enter(.variant, expected: "v")
            return .variant(try inner.value())
        case .structure:
            var fields = try enter(.structure, expected: "(...)")
            var values: [DBusValue] = []
            while !fields.isAtEnd { values.append(try fields.value()) }
            return .structure(values)
        case .array:
            return try arrayValue()
        default:
            throw mismatch(expected: "a supported D-Bus type")
        }
    }

    private mutating func arrayValue() throws(DBusDecodingError) -> DBusValue {
        let full = signature
        let element = String(full.dropFirst())
        switch elementType {
        case .byte:
            return .bytes(try withBytes { Array($0.bindMemory(to: UInt8.self)) })
        case .dictEntry:
            // "a{kv}": the key is one basic type code, the value the rest.
            let inner = element.dropFirst().dropLast()
            guard let keyCode = inner.first else { throw mismatch(expected: "a{kv}") }
            var entries = try enter(.array, expected: full)
            var values: [DBusDictEntry] = []
            while !entries.isAtEnd {
                var entry = try entries.enter(.dictEntry, expected: "{kv}")
                let key = try entry.value()
                let value = try entry.value()
                values.append(DBusDictEntry(key: key, value: value))
            }
            return .dictionary(key: String(keyCode), value: String(inner.dropFirst()), values)
        default:
            var items = try enter(.array, expected: full)
            var values: [DBusValue] = []
            while !items.isAtEnd { values.append(try items.value()) }
            return .array(element: element, values)
        }
    }

    /// Reads every remaining value.
    package mutating func values() throws(DBusDecodingError) -> [DBusValue] {
        var values: [DBusValue] = []
        while !isAtEnd { values.append(try value()) }
        return values
    }
}

/// Appends arguments to a message with libdbus's iterator API.
///
/// libdbus aborts the process on invalid UTF-8, object paths or signatures and on elements that
/// do not match their container, so the writer checks all of these first and throws instead.
struct DBusMessageWriter {
    private var iter = DBusMessageIter()

    init(appendingTo message: OpaquePointer) {
        dbus_message_iter_init_append(message, &iter)
    }

    private init(iter: DBusMessageIter) { self.iter = iter }

    mutating func append(_ values: DBusValue...) throws(DBusEncodingError) {
        for value in values { try append(value) }
    }

    mutating func append(_ value: DBusValue) throws(DBusEncodingError) {
        switch value {
        case .byte(let byte): var basic = DBusBasicValue(); basic.byt = byte; try appendBasic(.byte, &basic)
        case .boolean(let flag):
            var basic = DBusBasicValue(); basic.bool_val = flag ? 1 : 0; try appendBasic(.boolean, &basic)
        case .int16(let number): var basic = DBusBasicValue(); basic.i16 = number; try appendBasic(.int16, &basic)
        case .uint16(let number): var basic = DBusBasicValue(); basic.u16 = number; try appendBasic(.uint16, &basic)
        case .int32(let number): var basic = DBusBasicValue(); basic.i32 = number; try appendBasic(.int32, &basic)
        case .uint32(let number): var basic = DBusBasicValue(); basic.u32 = number; try appendBasic(.uint32, &basic)
        case .int64(let number):
            var basic = DBusBasicValue(); basic.i64 = dbus_int64_t(number); try appendBasic(.int64, &basic)
        case .uint64(let number):
            var basic = DBusBasicValue(); basic.u64 = dbus_uint64_t(number); try appendBasic(.uint64, &basic)
        case .double(let number): var basic = DBusBasicValue(); basic.dbl = number; try appendBasic(.double, &basic)
        case .string(let text):
            try appendString(.string, text)
        case .objectPath(let path):
            guard Self.isValidPath(path) else {
                throw DBusEncodingError(reason: "'\(path)' is not a valid object path")
            }
            try appendString(.objectPath, path)
        case .signature(let signature):
            guard Self.isValidSignature(signature, single: false) else {
                throw DBusEncodingError(reason: "'\(signature)' is not a valid signature")
            }
            try appendString(.signature, signature)
        case .bytes(let bytes):
            try container(.array, signature: "y") { (sub: inout DBusMessageWriter) throws(DBusEncodingError) in
                let appended = bytes.withUnsafeBufferPointer { buffer in
                    beacond_dbus_append_bytes(&sub.iter, buffer.baseAddress, Int32(buffer.count))
                }
                guard appended != 0 else {
                    throw DBusEncodingError(reason: "out of memory appending \(bytes.count) bytes")
                }
            }
        case .array(let element, let elements):
            guard Self.isValidSignature(element, single: true) else {
                throw DBusEncodingError(reason: "'\(element)' is not a single complete type")
            }
            try container(.array, signature: element) { (sub: inout DBusMessageWriter) throws(DBusEncodingError) in
                for item in elements {
                    guard item.signature == element else {
                        throw DBusEncodingError(reason: "a '\(item.signature)' element in an array of '\(element)'")
                    }
                    try sub.append(item)
                }
            }
        case .dictionary(let key, let valueSignature, let entries):
            let entrySignature = "{" + key + valueSignature + "}"
            guard Self.isValidSignature("a" + entrySignature, single: true) else {
                throw DBusEncodingError(reason: "'a\(entrySignature)' is not a valid dictionary type")
            }
            try container(.array, signature: entrySignature) {
                (sub: inout DBusMessageWriter) throws(DBusEncodingError) in
                for entry in entries {
                    guard entry.key.signature == key, entry.value.signature == valueSignature else {
                        throw DBusEncodingError(
                            reason: "a '{\(entry.key.signature)\(entry.value.signature)}' entry in 'a\(entrySignature)'"
                        )
                    }
                    try sub.container(.dictEntry, signature: nil) {
                        (pair: inout DBusMessageWriter) throws(DBusEncodingError) in
                        try pair.append(entry.key)
                        try pair.append(entry.value)
                    }
                }
            }
        case .structure(let fields):
            guard !fields.isEmpty else { throw DBusEncodingError(reason: "an empty structure") }
            try container(.structure, signature: nil) { (sub: inout DBusMessageWriter) throws(DBusEncodingError) in
                for field in fields { try sub.append(field) }
            }
        case .variant(let inner):
            try container(.variant, signature: inner.signature) {
                (sub: inout DBusMessageWriter) throws(DBusEncodingError) in
                try sub.append(inner)
            }
        }
    }

    private mutating func appendBasic(_ code: DBusTypeCode, _ value: inout DBusBasicValue) throws(DBusEncodingError) {
        guard dbus_message_iter_append_basic(&iter, code.rawValue, &value) != 0 else {
            throw DBusEncodingError(reason: "out of memory appending a '\(code)'")
        }
    }

    private mutating func appendString(_ code: DBusTypeCode, _ text: String) throws(DBusEncodingError) {
        // D-Bus strings cannot hold NUL; Swift strings are always valid UTF-8 otherwise.
        guard !text.utf8.contains(0) else { throw DBusEncodingError(reason: "a string with a NUL byte") }
        let appended = text.withCString { beacond_dbus_append_string(&iter, code.rawValue, $0) }
        guard appended != 0 else { throw DBusEncodingError(reason: "out of memory appending a '\(code)'") }
    }

    private mutating func container(
        _ code: DBusTypeCode, signature: String?, _ body: (inout DBusMessageWriter) throws(DBusEncodingError) -> Void
    ) throws(DBusEncodingError) {
        var sub = DBusMessageIter()
        let opened: dbus_bool_t
        if let signature {
            opened = signature.withCString { dbus_message_iter_open_container(&iter, code.rawValue, $0, &sub) }
        } else {
            opened = dbus_message_iter_open_container(&iter, code.rawValue, nil, &sub)
        }
        guard opened != 0 else { throw DBusEncodingError(reason: "out of memory opening a '\(code)'") }
        var writer = DBusMessageWriter(iter: sub)
        do {
            try body(&writer)
        } catch {
            dbus_message_iter_abandon_container(&iter, &writer.iter)
            throw error
        }
        guard dbus_message_iter_close_container(&iter, &writer.iter) != 0 else {
            throw DBusEncodingError(reason: "out of memory closing a '\(code)'")
        }
    }

    static func isValidPath(_ path: String) -> Bool {
        !path.utf8.contains(0) && path.withCString { dbus_validate_path($0, nil) } != 0
    }

    static func isValidSignature(_ signature: String, single: Bool) -> Bool {
        guard !signature.utf8.contains(0) else { return false }
        return signature.withCString {
            single ? dbus_signature_validate_single($0, nil) : dbus_signature_validate($0, nil)
        } != 0
    }
}
