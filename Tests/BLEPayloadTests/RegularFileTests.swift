import BLEPayload
import BeacondTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Issue 25, item 5: every file named from outside is opened by `RegularFile.open`, which never
/// blocks and keeps only regular files.
@Suite struct RegularFileTests {
    /// Opens both sides of `fifo` after `seconds` (which unblocks an `open(2)` stuck on either), so a
    /// regression fails its expectation instead of hanging the test run.
    static func unblock(_ fifo: String, after seconds: Double) -> Thread {
        let thread = Thread {
            usleep(useconds_t(seconds * 1_000_000))
            // A read side first (which unblocks an open for writing), then a write side.
            let reader = open(fifo, O_RDONLY | O_NONBLOCK)
            let writer = open(fifo, O_WRONLY | O_NONBLOCK)
            for fd in [reader, writer] where fd >= 0 { close(fd) }
        }
        thread.start()
        return thread
    }

    /// Makes a FIFO named `name` with no writer (opened from both sides after 3 s by `unblock`)
    /// and expects `open` to refuse it with `expected(fifo)` within a second.
    static func expectFIFORefusedAtOnce<E: Error & Equatable>(
        named name: String, with expected: (String) -> E, by open: (String) throws -> Void
    ) throws {
        let scratch = try TemporaryDirectory(prefix: "beacond-regular")
        let fifo = scratch.file(name)
        #expect(mkfifo(fifo, 0o600) == 0)
        _ = unblock(fifo, after: 3)
        let started = Date()
        #expect(throws: expected(fifo)) { try open(fifo) }
        #expect(Date().timeIntervalSince(started) < 1)
    }

    @Test func aFIFOIsRefusedAtOnceWithoutAWriter() throws {
        try Self.expectFIFORefusedAtOnce(named: "fifo", with: { _ in RegularFile.OpenError.notRegular(.fifo) }) {
            _ = try RegularFile.open($0)
        }
        #expect(RegularFile.OpenError.notRegular(.fifo).description == "is a FIFO, not a regular file")
    }

    @Test func aDirectoryAndACharacterDeviceAreRefused() throws {
        let scratch = try TemporaryDirectory(prefix: "beacond-regular")
        #expect(throws: RegularFile.OpenError.notRegular(.directory)) { try RegularFile.open(scratch.path) }
        #expect(throws: RegularFile.OpenError.notRegular(.characterDevice)) { try RegularFile.open("/dev/null") }
        #expect(throws: RegularFile.OpenError.notRegular(.characterDevice)) { try RegularFile.check("/dev/zero") }
        #expect(
            RegularFile.OpenError.notRegular(.characterDevice).description
                == "is a character device, not a regular file")
        #expect(RegularFile.OpenError.notRegular(.directory).description == "is a directory, not a regular file")
    }

    @Test func aMissingFileSaysWhy() {
        #expect(throws: RegularFile.OpenError.open(errno: ENOENT)) { try RegularFile.open("/nonexistent/x") }
        #expect(RegularFile.OpenError.open(errno: ENOENT).description == "cannot open: No such file or directory")
    }

    @Test func aRegularFileAndASymlinkToOneOpenWithTheirSize() throws {
        let scratch = try TemporaryDirectory(prefix: "beacond-regular")
        let file = try scratch.write("file", "twelve bytes")
        let link = scratch.file("link")
        #expect(symlink(file, link) == 0)
        for path in [file, link] {
            let opened = try RegularFile.open(path)
            defer { close(opened.descriptor) }
            #expect(opened.size == 12)
            var bytes = [UInt8](repeating: 0, count: 32)
            #expect(read(opened.descriptor, &bytes, bytes.count) == 12)
            #expect(fcntl(opened.descriptor, F_GETFD) & FD_CLOEXEC != 0)
        }
        try RegularFile.check(link)
    }

    /// `beacond replay FIFO`, `watch --replay FIFO` and the replay backend all read through this.
    @Test func aCaptureReaderRefusesAFIFOAndADevice() throws {
        try Self.expectFIFORefusedAtOnce(
            named: "capture.btsnoop",
            with: { CaptureError(file: $0, recordIndex: -1, offset: 0, kind: .notRegularFile(.fifo)) }
        ) { _ = try CaptureReader(path: $0) }
        do {
            _ = try CaptureReader(path: "/dev/zero")
            Issue.record("/dev/zero was read as a capture")
        } catch {
            #expect(error.description == "/dev/zero: file header at byte 0: is a character device, not a regular file")
        }
    }
}
