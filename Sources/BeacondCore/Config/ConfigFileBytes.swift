/// Where a config file's bytes go wrong before any YAML is read: past the size cap, or not
/// UTF-8. Both problems name the line and column (in characters, as YAML errors do) of the first
/// byte at fault, so an operator can find it as they find a syntax error.
enum ConfigFileBytes {
    /// The file went past `limit` bytes (the reader stops just after): the place of byte `limit`
    /// (0-based), the first one over.
    static func tooLarge(_ bytes: [UInt8], limit: Int, file: String) -> ConfigurationProblem {
        let place = position(of: min(limit, bytes.count), in: bytes)
        return ConfigurationProblem(
            file: file, key: nil, line: place.line, column: place.column,
            reason: "is larger than \(limit / 1024) KiB (the limit is passed here); a config file needs far less")
    }

    /// The first byte that does not start or continue a UTF-8 character, as a problem; nil for
    /// valid UTF-8.
    static func invalidUTF8(_ bytes: [UInt8], file: String) -> ConfigurationProblem? {
        guard let offset = firstInvalidUTF8(bytes) else { return nil }
        let place = position(of: offset, in: bytes)
        let byte = bytes[offset]
        let hex = String(byte, radix: 16, uppercase: true)
        return ConfigurationProblem(
            file: file, key: nil, line: place.line, column: place.column,
            reason: "is not valid UTF-8: byte 0x\(byte < 16 ? "0" : "")\(hex) at offset \(offset)")
    }

    /// The offset of the first byte of the first ill-formed sequence, or nil.
    static func firstInvalidUTF8(_ bytes: [UInt8]) -> Int? {
        var parser = Unicode.UTF8.ForwardParser()
        var iterator = bytes.makeIterator()
        var offset = 0
        while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid(let scalar): offset += scalar.count
            case .error: return offset
            case .emptyInput: return nil
            }
        }
    }

    /// 1-based line and column of byte `offset`: lines end at `\n` (libyaml's `\r\n` and `\r`
    /// count once each), columns count characters (UTF-8 lead bytes) from the line's start.
    static func position(of offset: Int, in bytes: [UInt8]) -> (line: Int, column: Int) {
        var line = 1
        var column = 1
        var previous: UInt8 = 0
        for byte in bytes.prefix(offset) {
            if byte == 0x0A {
                if previous != 0x0D { line += 1 }
                column = 1
            } else if byte == 0x0D {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {
                column += 1
            }
            previous = byte
        }
        return (line, column)
    }
}
