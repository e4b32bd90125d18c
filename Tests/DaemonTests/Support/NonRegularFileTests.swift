import BLEPayload
import BeacondTestSupport
import Foundation
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// Issue 25, item 5: files that are not files. Every path beacond reads (config, CA, password,
/// token, capture, timeline, state) goes through `RegularFile.open`; the few it writes are opened
/// so that a FIFO in their place cannot block either.
@Suite struct NonRegularFileTests {
    /// A FIFO in a fresh directory, with a thread that opens both its sides after `seconds`: an
    /// `open(2)` blocked on either side then returns, so a regression fails instead of hanging.
    static func fifo(in scratch: TemporaryDirectory, _ name: String, unblockAfter seconds: Double = 3) -> String {
        let path = scratch.file(name)
        #expect(mkfifo(path, 0o600) == 0)
        Thread {
            usleep(useconds_t(seconds * 1_000_000))
            // A read side first (which unblocks an open for writing), then a write side.
            let reader = open(path, O_RDONLY | O_NONBLOCK)
            let writer = open(path, O_WRONLY | O_NONBLOCK)
            for fd in [reader, writer] where fd >= 0 { close(fd) }
        }.start()
        return path
    }

    static func seconds(_ body: () throws -> Void) rethrows -> Double {
        let started = Date()
        try body()
        return Date().timeIntervalSince(started)
    }

    /// What `body` threw, if anything, and how long it took.
    static func failure<E: Error>(_ body: () throws(E) -> Void) -> (error: E?, seconds: Double) {
        var thrown: E?
        let elapsed = seconds {
            do throws(E) {
                try body()
            } catch {
                thrown = error
            }
        }
        return (thrown, elapsed)
    }

    @Test func readRegularFileRefusesWhatIsNotAFileAndCapsTheSize() throws {
        let scratch = try TemporaryDirectory(prefix: "beacond-nonregular")
        let fifo = Self.fifo(in: scratch, "fifo")
        let elapsed = Self.seconds {
            #expect(throws: BoundedFileError.notRegular(.fifo)) { try readRegularFile(fifo, maxBytes: 10) }
        }
        #expect(elapsed < 1)
        #expect(throws: BoundedFileError.notRegular(.directory)) { try readRegularFile(scratch.path, maxBytes: 10) }
        #expect(throws: BoundedFileError.notRegular(.characterDevice)) {
            try readRegularFile("/dev/null", maxBytes: 10)
        }
        #expect(BoundedFileError.notRegular(.fifo).description == "is a FIFO, not a regular file")
        let file = try scratch.write("eleven", "eleven byte")
        #expect(try readRegularFile(file, maxBytes: 11) == Array("eleven byte".utf8))
        #expect(throws: BoundedFileError.tooLarge) { try readRegularFile(file, maxBytes: 10) }
        // The prefix: the cap and one byte more, for a caller that names where the cap was passed.
        #expect(try readRegularFilePrefix(file, maxBytes: 4) == Array("eleve".utf8))
        #expect(try readRegularFilePrefix(file, maxBytes: 64) == Array("eleven byte".utf8))
    }

    /// `--config FIFO` (and a directory, a device): refused at once, exit 78 (`ConfigurationError`).
    @Test(arguments: ["fifo", "directory", "/dev/null"])
    func aConfigThatIsNotAFileIsAConfigurationError(_ kind: String) throws {
        let scratch = try TemporaryDirectory(prefix: "beacond-nonregular")
        let path =
            switch kind {
            case "fifo": Self.fifo(in: scratch, "beacond.yaml")
            case "directory": scratch.path
            default: kind
            }
        let what = ["fifo": "a FIFO", "directory": "a directory"][kind] ?? "a character device"
        let (thrown, elapsed) = Self.failure { () throws(ConfigurationError) in
            _ = try DaemonConfiguration.load(path: path, overrides: DaemonOverrides())
        }
        #expect(elapsed < 1)
        #expect(thrown?.description == "\(path): is \(what), not a regular file")
        #expect(thrown?.exitCode == 78)
    }

    /// `mqtt.ca_file`, `mqtt.password_file`, `remote.ca_file`, `remote.bearer_token_file` and
    /// `--replay` are checked with the same open: a FIFO is a configuration error naming the key.
    @Test(arguments: ["mqtt.ca_file", "mqtt.password_file", "remote.ca_file", "remote.bearer_token_file"])
    func aKeyNamingAFIFOIsRefusedWithItsLine(_ key: String) throws {
        let scratch = try TemporaryDirectory(prefix: "beacond-nonregular")
        let fifo = Self.fifo(in: scratch, "named")
        let parts = key.split(separator: ".")
        let section =
            parts[0] == "mqtt" ? "  url: mqtts://127.0.0.1:8883\n  username: u\n" : "  url: https://127.0.0.1/\n"
        let config = try scratch.write("beacond.yaml", "\(parts[0]):\n\(section)  \(parts[1]): \(fifo)\n")
        let (thrown, elapsed) = Self.failure { () throws(ConfigurationError) in
            _ = try DaemonConfiguration.load(path: config, overrides: DaemonOverrides())
        }
        #expect(elapsed < 1)
        let line = parts[0] == "mqtt" ? 4 : 3
        #expect(thrown?.description.hasPrefix("\(config):\(line):") == true, "\(String(describing: thrown))")
        #expect(thrown?.description.contains("\(key): \"\(fifo)\" is a FIFO, not a regular file") == true)
        #expect(thrown?.exitCode == 78)
    }

    /// libmosquitto opens the CA file by path, at setup and at every connect: it gets a private copy.
    @Test func theCAFileLibmosquittoOpensIsAPrivateCopy() throws {
        let scratch = try TemporaryDirectory(prefix: "beacond-nonregular")
        let ca = try scratch.write("ca.pem", "-----BEGIN CERTIFICATE-----\n")
        let copy = try PrivateFileCopy(of: ca, directory: scratch.path)
        #expect(copy.path == "/proc/self/fd/\(copy.descriptor)")
        // The original replaced by a FIFO afterwards: the copy is unaffected.
        #expect(unlink(ca) == 0 && mkfifo(ca, 0o600) == 0)
        #expect(try readRegularFile(copy.path, maxBytes: 100) == Array("-----BEGIN CERTIFICATE-----\n".utf8))
        // Nothing is left in the directory.
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path) == ["ca.pem"])
        let fifo = Self.fifo(in: scratch, "fifo.pem")
        #expect(throws: PrivateFileCopy.Failure.self) { try PrivateFileCopy(of: fifo, directory: scratch.path) }
        do {
            _ = try PrivateFileCopy(of: fifo, directory: scratch.path)
        } catch {
            #expect(error.description == "\(fifo): is a FIFO, not a regular file")
        }
    }

    /// `--record FIFO`: refused at once (with no reader, open(2) of a FIFO for writing would block).
    @Test func aRecordingPathThatIsAFIFOIsRefused() throws {
        let scratch = try TemporaryDirectory(prefix: "beacond-nonregular")
        let fifo = Self.fifo(in: scratch, "record.btsnoop")
        let (thrown, elapsed) = Self.failure { () throws(BTSnoopRecorderError) in
            _ = try BTSnoopRecorder(path: fifo, maxBytes: 1 << 20, keep: 2, logger: HCITestLogger.quiet)
        }
        #expect(elapsed < 1)
        #expect(thrown?.description == "cannot record to \(fifo): it is a FIFO, not a regular file")
        #expect(throws: BTSnoopRecorderError.self) {
            try BTSnoopRecorder(path: "/dev/null", maxBytes: 1 << 20, keep: 0, logger: HCITestLogger.quiet)
        }
    }

    /// A state file's temporary left behind as a FIFO: the atomic write replaces it, never blocks.
    @Test func anAtomicWriteReplacesWhateverIsAtItsTemporaryPath() throws {
        let scratch = try TemporaryDirectory(prefix: "beacond-nonregular")
        let target = scratch.file("state.json")
        _ = Self.fifo(in: scratch, "state.json.tmp.\(getpid())")
        let elapsed = try Self.seconds { try FileOutput.write(Array("{}".utf8), to: target) }
        #expect(elapsed < 1)
        #expect(FileManager.default.contents(atPath: target) == Data("{}".utf8))
        #expect(!FileManager.default.fileExists(atPath: target + ".tmp.\(getpid())"))
    }

    /// `--remote-url file://FIFO`: a failed fetch at once, saying what the path is.
    @Test func aRemoteFileURLNamingAFIFOFailsTheFetch() throws {
        let scratch = try TemporaryDirectory(prefix: "beacond-nonregular")
        let fifo = Self.fifo(in: scratch, "state.json")
        let elapsed = Self.seconds {
            #expect(throws: RemoteFailure(kind: .file, reason: "\(fifo) is a FIFO, not a regular file")) {
                try RemoteFetcher.readFile(fifo)
            }
        }
        #expect(elapsed < 1)
    }
}
