import BLEPayload
import Glibc
import Logging
import Synchronization
import SystemPackage

/// Why a recording could not start.
struct BTSnoopRecorderError: Error, Hashable, Sendable, CustomStringConvertible {
    var path: String
    var operation: String
    var errno: Int32
    /// What the path names when it is not a regular file (then `errno` is 0).
    var notRegular: RegularFile.Kind? = nil

    var description: String {
        if let notRegular { return "cannot record to \(path): it is \(notRegular), not a regular file" }
        return "cannot record to \(path): \(operation): \(errnoText(errno))"
    }
}

/// Records the HCI packets a scanner sends and receives to a btsnoop file (version 1,
/// datalink 1002: H4, type byte first), which `beacond replay`, btmon and Wireshark read.
///
/// Records are buffered and written at least once a second. The file is bounded: when the next
/// record would take it past `maxBytes` it is rotated (FILE → FILE.1 → … → FILE.keep, the oldest
/// dropped) and a new FILE starts with a fresh header; with `keep` 0 FILE just starts over. An
/// existing FILE is rotated away at start, so a restart never overwrites the last recording. A
/// write error (a full disk) is logged once and ends the recording; scanning goes on.
///
/// One thread at a time records, flushes and closes (the scanner's reader thread); the counters
/// can be read from anywhere.
// @unchecked Sendable: one thread at a time records; the counters are atomics.
package final class BTSnoopRecorder: @unchecked Sendable {
    static let datalink: UInt32 = 1002
    static let fileHeaderSize = 16
    static let recordHeaderSize = 24
    /// Buffered bytes that trigger a write before the flush interval is up.
    static let bufferLimit = 64 * 1024
    static let flushInterval: Int64 = 1_000_000

    let path: String
    let maxBytes: Int
    let keep: Int
    private let logger: Logger
    private(set) var descriptor: Int32 = -1
    private var pending: [UInt8] = []
    /// Bytes already written to the current file.
    private var written = 0
    private var lastFlush: Int64
    private let header = BTSnoopWriter.fileHeader(datalink: BTSnoopRecorder.datalink)

    private let recordCount = Atomic<Int>(0)
    private let rotationCount = Atomic<Int>(0)
    private let stopped = Atomic<Bool>(false)

    /// Opens `path` (rotating an existing one away). `maxBytes` is at least room for the header and one record.
    init(path: String, maxBytes: Int, keep: Int, logger: Logger) throws(BTSnoopRecorderError) {
        self.path = path
        self.maxBytes = max(maxBytes, Self.fileHeaderSize + Self.recordHeaderSize + 260)
        self.keep = max(0, keep)
        self.logger = logger
        lastFlush = MonotonicClock.micros()
        pending.reserveCapacity(Self.bufferLimit + Self.recordHeaderSize + HCICommandChannel.bufferSize)
        var status = stat()
        if stat(path, &status) == 0, status.st_size > 0 { shiftRotated() }
        try openFresh()
    }

    deinit { close() }

    var records: Int { recordCount.load(ordering: .relaxed) }
    var rotations: Int { rotationCount.load(ordering: .relaxed) }
    /// False once a write failed or the recorder was closed.
    var isRecording: Bool { !stopped.load(ordering: .relaxed) }

    /// Appends one H4 packet. `sent`: host to controller (a command); otherwise received.
    func record(_ packet: UnsafeRawBufferPointer, sent: Bool, wallMicros: Int64) {
        guard descriptor >= 0, !packet.isEmpty else { return }
        let size = Self.recordHeaderSize + packet.count
        if written + pending.count + size > maxBytes, written + pending.count > Self.fileHeaderSize {
            rotate()
            guard descriptor >= 0 else { return }
        }
        // Bit 0: received; bit 1: command or event (H4 types 0x01 and 0x04) rather than data.
        let type = packet[0]
        let flags: UInt32 = (sent ? 0 : 1) | (type == 0x01 || type == 0x04 ? 2 : 0)
        // The record header BTSnoopWriter.appendRecord writes, built in place so recording
        // allocates nothing per packet.
        let length = UInt32(truncatingIfNeeded: packet.count)
        let stamp = UInt64(bitPattern: wallMicros &+ CaptureReader.btsnoopEpochOffset)
        var fields = (
            length.bigEndian, length.bigEndian, flags.bigEndian, UInt32(0),
            UInt32(truncatingIfNeeded: stamp >> 32).bigEndian, UInt32(truncatingIfNeeded: stamp).bigEndian
        )
        withUnsafeBytes(of: &fields) { pending.append(contentsOf: $0) }
        pending.append(contentsOf: packet)
        recordCount.add(1, ordering: .relaxed)
        if pending.count >= Self.bufferLimit { flush() }
    }

    /// Writes what is buffered when the flush interval is up.
    func flushIfDue(now: Int64 = MonotonicClock.micros()) {
        if now - lastFlush >= Self.flushInterval { flush() }
    }

    func flush() {
        lastFlush = MonotonicClock.micros()
        guard descriptor >= 0, !pending.isEmpty else { return }
        let failure = writeAll(pending)
        pending.removeAll(keepingCapacity: true)
        if let failure { fail("write", failure) }
    }

    /// Flushes and closes; later records are ignored.
    func close() {
        flush()
        guard descriptor >= 0 else { return }
        _ = Glibc.close(descriptor)
        descriptor = -1
        stopped.store(true, ordering: .relaxed)
    }

    /// `status.hci.recording`.
    var recordingStatus: RecordingStatus {
        RecordingStatus(path: path, active: isRecording, records: records, rotations: rotations)
    }

    // MARK: Files

    private func openFresh() throws(BTSnoopRecorderError) {
        // Non-blocking: a FIFO in the recording's place fails at once (ENXIO, no reader) or is refused
        // below, instead of blocking start-up in open(2) or the scanner's thread in write(2).
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0o640)
        var info = stat()
        guard fd >= 0 else {
            let code = errno
            // A FIFO without a reader fails with ENXIO: say what the path is rather than that.
            if stat(path, &info) == 0, (info.st_mode & S_IFMT) != S_IFREG {
                throw BTSnoopRecorderError(
                    path: path, operation: "open", errno: 0, notRegular: RegularFile.Kind(mode: info.st_mode))
            }
            throw BTSnoopRecorderError(path: path, operation: "open", errno: code)
        }
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            let kind = RegularFile.Kind(mode: info.st_mode)
            _ = Glibc.close(fd)
            throw BTSnoopRecorderError(path: path, operation: "open", errno: 0, notRegular: kind)
        }
        descriptor = fd
        written = 0
        if let code = writeAll(header) {
            _ = Glibc.close(fd)
            descriptor = -1
            throw BTSnoopRecorderError(path: path, operation: "write the header", errno: code)
        }
    }

    private func rotate() {
        flush()
        guard descriptor >= 0 else { return }
        _ = Glibc.close(descriptor)
        descriptor = -1
        shiftRotated()
        do {
            try openFresh()
            rotationCount.add(1, ordering: .relaxed)
        } catch {
            fail("reopen after rotating", error.errno)
        }
    }

    /// FILE.(keep-1) → FILE.keep, …, FILE → FILE.1; with `keep` 0 nothing moves (FILE is truncated).
    private func shiftRotated() {
        guard keep > 0 else { return }
        if keep > 1 {
            for index in stride(from: keep - 1, through: 1, by: -1) {
                _ = rename("\(path).\(index)", "\(path).\(index + 1)")
            }
        }
        _ = rename(path, "\(path).1")
    }

    /// Writes everything; the errno of a failure, or nil.
    private func writeAll(_ bytes: [UInt8]) -> Int32? {
        do {
            written += try FileDescriptor(rawValue: descriptor).writeAll(bytes)
            return nil
        } catch {
            return (error as? Errno)?.rawValue ?? EIO
        }
    }

    private func fail(_ operation: String, _ code: Int32) {
        logger.error("recording to \(path) stopped: \(operation) failed: \(errnoText(code)); scanning continues")
        pending.removeAll(keepingCapacity: true)
        if descriptor >= 0 { _ = Glibc.close(descriptor) }
        descriptor = -1
        stopped.store(true, ordering: .relaxed)
    }
}
