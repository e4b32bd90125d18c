import BLEPayload
import Glibc

/// A key file's problem: the file, the line when there is one, and why.
package struct VenueKeyFileError: Error, Hashable, Sendable, CustomStringConvertible {
    package var path: String
    package var line: Int?
    package var reason: String

    package var description: String {
        "\(path)\(line.map { ":\($0)" } ?? ""): \(reason)"
    }
}

/// The key file format (docs/security.md): one key per line, `#` comments and blank lines
/// ignored:
///
/// ```text
/// key 1 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
/// day-key 2 2026-11-28 3a7bd3e2360a3d29eea436fcfb7e44c735d117c42d1c1835420b6b9942dd4f1b
/// ```
///
/// The file must be a regular file that neither its group nor others may read or write (0600 or
/// 0400): anyone who reads it can forge frames.
package enum VenueKeyFile {
    /// Larger files are refused: 16 ids of venue keys and a season of day keys fit many times.
    package static let maxBytes = 256 * 1024

    /// Reads and checks `path`.
    package static func load(_ path: String) throws(VenueKeyFileError) -> VenueKeyring {
        try parse(read(path), path: path)
    }

    /// The file's bytes, after checking what it is and who may read it (on the open descriptor,
    /// so the checked file is the one read).
    static func read(_ path: String) throws(VenueKeyFileError) -> [UInt8] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)
        guard descriptor >= 0 else {
            throw VenueKeyFileError(path: path, line: nil, reason: "cannot open: \(errnoText(errno))")
        }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            throw VenueKeyFileError(path: path, line: nil, reason: "cannot stat: \(errnoText(errno))")
        }
        let kind = RegularFile.Kind(mode: info.st_mode)
        guard kind == .regular else {
            throw VenueKeyFileError(path: path, line: nil, reason: "is \(kind), not a regular file")
        }
        let permissions = info.st_mode & 0o7777
        guard permissions & 0o077 == 0 else {
            let octal = String(permissions, radix: 8)
            throw VenueKeyFileError(
                path: path, line: nil,
                reason: "has mode 0\(octal): its group or others may use it (chmod 600 \(path))")
        }
        guard info.st_size <= maxBytes else {
            throw VenueKeyFileError(path: path, line: nil, reason: "is larger than \(maxBytes) bytes")
        }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size) + 1)
        var filled = 0
        while filled < bytes.count {
            let count = bytes.withUnsafeMutableBytes { raw in
                Glibc.read(descriptor, raw.baseAddress! + filled, raw.count - filled)
            }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else {
                throw VenueKeyFileError(path: path, line: nil, reason: "cannot read: \(errnoText(errno))")
            }
            if count == 0 { break }
            filled += count
        }
        guard filled <= maxBytes else {
            throw VenueKeyFileError(path: path, line: nil, reason: "is larger than \(maxBytes) bytes")
        }
        return Array(bytes[..<filled])
    }

    /// Parses the key lines of `bytes`; `path` names the file in errors.
    package static func parse(_ bytes: [UInt8], path: String) throws(VenueKeyFileError) -> VenueKeyring {
        var keyring = VenueKeyring()
        var lineNumber = 0
        for rawLine in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            lineNumber += 1
            func problem(_ reason: String) -> VenueKeyFileError {
                VenueKeyFileError(path: path, line: lineNumber, reason: reason)
            }
            guard let line = String(validating: rawLine, as: UTF8.self) else { throw problem("is not UTF-8") }
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" })
            guard let first = fields.first, !first.hasPrefix("#") else { continue }
            switch (first, fields.count) {
            case ("key", 3):
                let id = try keyID(fields[1], problem)
                guard keyring.venueKeys[id] == nil else { throw problem("key id \(id) is given twice") }
                keyring.addVenueKey(try keyBytes(fields[2], problem), id: id)
            case ("day-key", 4):
                let id = try keyID(fields[1], problem)
                guard let day = DayNumber.parse(fields[2]) else {
                    throw problem("\(TerminalText.escaped(String(fields[2].prefix(20)))) is not a date YYYY-MM-DD")
                }
                guard keyring.dayKeys[.init(keyID: id, day: day)] == nil else {
                    throw problem("day key \(id) for \(fields[2]) is given twice")
                }
                keyring.addDayKey(try keyBytes(fields[3], problem), id: id, day: day)
            default:
                throw problem("expected \"key ID HEX\" or \"day-key ID YYYY-MM-DD HEX\"")
            }
        }
        guard !keyring.isEmpty else { throw VenueKeyFileError(path: path, line: nil, reason: "holds no key") }
        return keyring
    }

    private static func keyID(_ text: Substring, _ problem: (String) -> VenueKeyFileError) throws(VenueKeyFileError)
        -> UInt8
    {
        guard let id = UInt8(text), id <= 15 else {
            throw problem("key id \(TerminalText.escaped(String(text.prefix(8)))) is not 0 to 15")
        }
        return id
    }

    private static func keyBytes(_ text: Substring, _ problem: (String) -> VenueKeyFileError)
        throws(VenueKeyFileError) -> [UInt8]
    {
        guard text.utf8.count == VenueKeyring.keyBytes * 2, let bytes = HexText.bytes(text) else {
            throw problem("a key is \(VenueKeyring.keyBytes * 2) hex digits")
        }
        return bytes
    }

    /// A key file holding one new venue key of `id`, drawn from the kernel's random source
    /// (getrandom(2), through Swift's system generator).
    package static func newKeyFile(id: UInt8, createdAt: String) -> String {
        var generator = SystemRandomNumberGenerator()
        let key = (0..<VenueKeyring.keyBytes).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return """
            # beacond venue key file (docs/security.md); made by `beacond keys new` at \(createdAt).
            # Keep it mode 0600, readable by the daemon's user only: whoever reads it can sign frames.
            key \(id) \(HexText.string(key))

            """
    }
}

extension VenueKeyFile {
    /// The longest span `dayKeyFile` prints: a season, not an open-ended key.
    package static let maxDays = 366

    /// A key file of day keys only, derived from `keyring`'s venue keys for `days` days from `first`:
    /// for a kiosk, which only verifies, so that a key stolen from it signs nothing after the event.
    package static func dayKeyFile(_ keyring: VenueKeyring, first: UInt32, days: Int, createdAt: String) -> String {
        var text = """
            # beacond day keys (docs/security.md), \(DayNumber.format(first)) to \
            \(DayNumber.format(first &+ UInt32(max(days, 1) - 1))); made by `beacond keys day` at \(createdAt).
            # Keep it mode 0600, readable by the daemon's user only.

            """
        for id in keyring.venueKeys.keys.sorted() {
            for offset in 0..<UInt32(max(days, 1)) {
                guard let key = keyring.key(id: id, day: first &+ offset) else { continue }
                text += "day-key \(id) \(DayNumber.format(first &+ offset)) \(HexText.string(key))\n"
            }
        }
        return text
    }
}

/// Lower-case hex of bytes, and bytes of hex text.
package enum HexText {
    package static func string(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        for byte in bytes { text += [digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]] }
        return String(decoding: text, as: UTF8.self)
    }

    /// Nil unless an even number of hex digits.
    package static func bytes(_ text: some StringProtocol) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = IntegerText.hexDigitValue(digits[index]),
                let low = IntegerText.hexDigitValue(digits[index + 1])
            else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }
}

/// Days since 1970-01-01 of a `YYYY-MM-DD` date (proleptic Gregorian, UTC), up to 2106-02-07, the
/// last day a 32-bit T reaches.
package enum DayNumber {
    package static func parse(_ text: some StringProtocol) -> UInt32? {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
            let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
            (1970...2106).contains(year), (1...12).contains(month), (1...31).contains(day)
        else { return nil }
        // Howard Hinnant's days_from_civil; a day past its month's end reads back as another date.
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = shiftedYear / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let days = era * 146_097 + yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear - 719_468
        guard let number = UInt32(exactly: days), number <= UInt32.max / 86_400, format(number) == text else {
            return nil
        }
        return number
    }

    /// `YYYY-MM-DD` of a day number.
    package static func format(_ day: UInt32) -> String {
        String(TimeFormat.iso8601(micros: Int64(day) * 86_400_000_000, fractionDigits: 0).prefix(10))
    }
}
