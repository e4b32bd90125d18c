import BeacondTestSupport
import Foundation
import Glibc
import Testing

@testable import BeacondCore

/// The key file: its lines, its mode, and `beacond keys new` (docs/security.md).
@Suite struct VenueKeyFileTests {
    static let hex = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

    static func write(_ text: String, mode: mode_t, in directory: TemporaryDirectory) throws -> String {
        let path = directory.path + "/venue.keys"
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        chmod(path, mode)
        return path
    }

    @Test func venueAndDayKeysAreRead() throws {
        let directory = try TemporaryDirectory(prefix: "keys")
        let text = "# venue keys\n\nkey 1 \(Self.hex)\n  day-key 2 2026-11-28 \(Self.hex.uppercased())\r\n"
        let keyring = try VenueKeyFile.load(Self.write(text, mode: 0o600, in: directory))
        #expect(keyring.venueKeys == [1: [UInt8](0..<32)])
        #expect(keyring.dayKeys == [.init(keyID: 2, day: 20_785): [UInt8](0..<32)])
        #expect(keyring.key(id: 2, day: 20_785) == [UInt8](0..<32))
        #expect(keyring.key(id: 2, day: 20_786) == nil)
    }

    @Test func aFileOthersMayReadIsRefusedWithItsMode() throws {
        let directory = try TemporaryDirectory(prefix: "keys")
        for mode: mode_t in [0o640, 0o604, 0o660, 0o666] {
            let path = try Self.write("key 1 \(Self.hex)\n", mode: mode, in: directory)
            let octal = String(mode, radix: 8)
            let reason = "has mode 0\(octal): its group or others may use it (chmod 600 \(path))"
            #expect(throws: VenueKeyFileError(path: path, line: nil, reason: reason)) { try VenueKeyFile.load(path) }
        }
        #expect(
            try VenueKeyFile.load(Self.write("key 1 \(Self.hex)\n", mode: 0o400, in: directory)).venueKeys.count == 1)
    }

    @Test func somethingElseThanARegularFileIsRefused() throws {
        let directory = try TemporaryDirectory(prefix: "keys")
        let fifo = directory.path + "/fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        #expect(throws: VenueKeyFileError(path: fifo, line: nil, reason: "is a FIFO, not a regular file")) {
            try VenueKeyFile.load(fifo)
        }
        #expect(
            throws: VenueKeyFileError(path: directory.path, line: nil, reason: "is a directory, not a regular file")
        ) {
            try VenueKeyFile.load(directory.path)
        }
        let missing = directory.path + "/missing"
        #expect(throws: VenueKeyFileError(path: missing, line: nil, reason: "cannot open: \(errnoText(ENOENT))")) {
            try VenueKeyFile.load(missing)
        }
    }

    @Test(arguments: [
        ("key 16 \(hex)", 1, "key id 16 is not 0 to 15"),
        ("key 1 00", 1, "a key is 64 hex digits"),
        ("key 1 \(String(repeating: "g", count: 64))", 1, "a key is 64 hex digits"),
        ("key 1 \(hex)\nkey 1 \(hex)", 2, "key id 1 is given twice"),
        ("# fine\nday-key 1 2026-02-30 \(hex)", 2, "2026-02-30 is not a date YYYY-MM-DD"),
        ("day-key 1 2026-11-28 \(hex)\nday-key 1 2026-11-28 \(hex)", 2, "day key 1 for 2026-11-28 is given twice"),
        ("secret \(hex)", 1, "expected \"key ID HEX\" or \"day-key ID YYYY-MM-DD HEX\""),
    ])
    func badLinesAreNamedWithTheirLine(text: String, line: Int, reason: String) {
        #expect(throws: VenueKeyFileError(path: "k", line: line, reason: reason)) {
            try VenueKeyFile.parse(Array(text.utf8), path: "k")
        }
    }

    @Test func aFileWithoutKeysIsRefused() {
        #expect(throws: VenueKeyFileError(path: "k", line: nil, reason: "holds no key")) {
            try VenueKeyFile.parse(Array("# nothing\n".utf8), path: "k")
        }
    }

    @Test func dayNumbersReadBack() {
        #expect(DayNumber.parse("1970-01-01") == 0)
        #expect(DayNumber.parse("2026-11-28") == 20_785)
        #expect(DayNumber.parse("2024-02-29") != nil && DayNumber.parse("2023-02-29") == nil)
        #expect(DayNumber.format(20_785) == "2026-11-28")
        for day: UInt32 in [0, 59, 365, 11_016, 20_785, 49_710] {
            #expect(DayNumber.parse(DayNumber.format(day)) == day, "\(day)")
        }
    }

    @Test func aNewKeyFileHoldsOneFreshKey() throws {
        let first = try VenueKeyFile.parse(Array(VenueKeyFile.newKeyFile(id: 3, createdAt: "now").utf8), path: "a")
        let second = try VenueKeyFile.parse(Array(VenueKeyFile.newKeyFile(id: 3, createdAt: "now").utf8), path: "b")
        #expect(Array(first.venueKeys.keys) == [3] && first.dayKeys.isEmpty)
        #expect(first.venueKeys[3]?.count == 32)
        #expect(first.venueKeys[3] != second.venueKeys[3])
    }
}
