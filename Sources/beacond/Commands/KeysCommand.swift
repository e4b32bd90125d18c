import ArgumentParser
import BeacondCore
import Foundation

struct KeysCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "Make and inspect the venue keys that sign GeoRacing v3 frames.",
        discussion: """
            Signed v3 frames (docs/security.md) carry a tag made with a venue key. A key file holds \
            one key per line: "key ID HEX" (a venue key, which derives one key per UTC day) or \
            "day-key ID YYYY-MM-DD HEX" (one day's key alone). It must be mode 0600 or 0400.
            """,
        subcommands: [NewKeyCommand.self, DayKeysCommand.self]
    )
}

struct NewKeyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "new",
        abstract: "Print a key file holding one new venue key.",
        discussion: """
            The key is 32 bytes from the kernel's random source (getrandom). Save it with a mode \
            only its owner can read: (umask 077; beacond keys new --id 1 > /etc/beacond/venue.keys)
            """
    )

    @Option(help: ArgumentHelp("The key id, 0 to 15: the frame says which key signed it.", valueName: "id"))
    var id: UInt8

    func validate() throws {
        guard id <= 15 else { throw ValidationError("--id \(id): a key id is 0 to 15") }
    }

    func run() throws {
        let now = TimeFormat.iso8601(micros: MonotonicClock.wallMicros(), fractionDigits: 0)
        FileHandle.standardOutput.write(Data(VenueKeyFile.newKeyFile(id: id, createdAt: now).utf8))
    }
}

struct DayKeysCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "day",
        abstract: "Print the day keys of a venue key file for the event's days: what a kiosk needs.",
        discussion: """
            A kiosk only verifies frames, so it needs no venue key: give it the day keys of the race \
            weekend (and a day either side for clocks near midnight). A day key stolen from a kiosk \
            signs nothing on another day. Save the output as the kiosk's key file, mode 0600.
            """
    )

    @Option(help: ArgumentHelp("The venue key file (beacond keys new).", valueName: "file"))
    var keyFile: String

    @Option(help: ArgumentHelp("The first day, YYYY-MM-DD (UTC).", valueName: "date"))
    var from: String

    @Option(help: ArgumentHelp("How many days, 1 to \(VenueKeyFile.maxDays).", valueName: "n"))
    var days = 3

    func validate() throws {
        guard DayNumber.parse(from) != nil else { throw ValidationError("--from \(from) is not a date YYYY-MM-DD") }
        guard (1...VenueKeyFile.maxDays).contains(days) else {
            throw ValidationError("--days \(days): 1 to \(VenueKeyFile.maxDays)")
        }
    }

    func run() throws {
        guard let keyring = try loadVenueKeys(keyFile, command: "keys day"), let first = DayNumber.parse(from) else {
            return
        }
        guard !keyring.venueKeys.isEmpty else {
            printError("beacond keys day: key file \(keyFile): holds no venue key (day keys cannot derive others)")
            throw ExitCode(78)
        }
        let now = TimeFormat.iso8601(micros: MonotonicClock.wallMicros(), fractionDigits: 0)
        let text = VenueKeyFile.dayKeyFile(keyring, first: first, days: days, createdAt: now)
        FileHandle.standardOutput.write(Data(text.utf8))
    }
}

/// The keys of `--key-file` or `security.key_file` (nil: none). A file that cannot be used
/// (missing, not a regular file, readable by its group or others, a bad line) is a configuration
/// error: exit 78, with the file, the line when there is one, and why.
func loadVenueKeys(_ path: String?, command: String) throws -> VenueKeyring? {
    guard let path else { return nil }
    do throws(VenueKeyFileError) {
        return try VenueKeyFile.load(path)
    } catch {
        printError("beacond \(command): key file \(error)")
        throw ExitCode(78)
    }
}
