import BLEPayload
import BeacondTestSupport
import Foundation
import Glibc
import Logging
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// Reading recordings back, as `beacond replay` does.
enum HCIRecordingFiles {
    /// `btmon -r path`: its exit status and what it printed (stdout and stderr).
    static func btmon(_ path: String) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/btmon")
        process.arguments = ["--no-pager", "-r", path]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self))
    }

    struct Record: Equatable {
        var flags: UInt32
        var timestamp: Int64
        var bytes: [UInt8]
    }

    static func temporaryDirectory() throws -> String {
        try TemporaryDirectory.make(prefix: "beacond-rec")
    }

    static func records(_ path: String) throws -> [Record] {
        let reader = try CaptureReader(path: path)
        guard case .btsnoop(datalink: 1002) = reader.format else { throw BTSnoopTestFailure("not btsnoop 1002") }
        var records: [Record] = []
        while let packet = try reader.next() {
            records.append(Record(flags: packet.flags, timestamp: packet.timestamp, bytes: Array(packet.bytes)))
        }
        return records
    }

    static func reportAddresses(_ path: String) throws -> [UInt64] {
        let reader = try CaptureReader(path: path)
        var extractor = AdvertisingExtractor()
        var addresses: [UInt64] = []
        while let packet = try reader.next() {
            _ = extractor.process(packet) { addresses.append($0.address.rawValue) }
        }
        return addresses
    }

    static func remove(_ directory: String) { try? FileManager.default.removeItem(atPath: directory) }

    static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    static func size(_ path: String) -> Int {
        var status = stat()
        return stat(path, &status) == 0 ? Int(status.st_size) : -1
    }
}

struct BTSnoopTestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

@Suite struct BTSnoopRecorderTests {
    static let start: Int64 = 1_778_932_800_000_000

    /// An H4 event packet of exactly `size` bytes whose parameters start with `marker`.
    static func event(_ marker: UInt8, size: Int = 40) -> [UInt8] {
        [0x04, 0x3E, UInt8(size - 3), marker] + [UInt8](repeating: 0xEE, count: size - 4)
    }

    func record(_ recorder: BTSnoopRecorder, _ packet: [UInt8], sent: Bool = false, at time: Int64) {
        packet.withUnsafeBytes { recorder.record($0, sent: sent, wallMicros: time) }
    }

    /// Runs `body` with a recorder of `name` in a fresh directory (removed afterwards) and its path.
    func withRecorder(
        _ name: String, maxBytes: Int = 1 << 20, keep: Int, logger: Logger = HCITestLogger.quiet,
        _ body: (BTSnoopRecorder, String) throws -> Void
    ) throws {
        let directory = try HCIRecordingFiles.temporaryDirectory()
        defer { HCIRecordingFiles.remove(directory) }
        let path = directory + "/" + name
        try body(try BTSnoopRecorder(path: path, maxBytes: maxBytes, keep: keep, logger: logger), path)
    }

    @Test func recordsReadBackWithDirectionFlagsAndTimestamps() throws {
        try withRecorder("a.btsnoop", keep: 5) { recorder, path in
            let command: [UInt8] = [0x01, 0x0C, 0x20, 0x02, 0x01, 0x00]
            let event = FakeController.legacyEvent([FakeController.report(0xB1, rssi: -40, data: [0x02, 0x01, 0x06])])
            record(recorder, command, sent: true, at: Self.start)
            record(recorder, [0x04] + event, at: Self.start + 1_500)
            recorder.close()
            #expect(!recorder.isRecording)
            #expect(recorder.records == 2)
            let bytes = try #require(FileManager.default.contents(atPath: path))
            #expect(Array(bytes.prefix(16)) == BTSnoopWriter.fileHeader(datalink: 1002))
            #expect(
                try HCIRecordingFiles.records(path) == [
                    HCIRecordingFiles.Record(flags: 0x2, timestamp: Self.start, bytes: command),
                    HCIRecordingFiles.Record(flags: 0x3, timestamp: Self.start + 1_500, bytes: [0x04] + event),
                ])
            #expect(try HCIRecordingFiles.reportAddresses(path) == [0xB1])
            // The same bytes BTSnoopWriter produces.
            var expected = BTSnoopWriter.fileHeader(datalink: 1002)
            BTSnoopWriter.appendRecord(to: &expected, timestamp: Self.start, flags: 0x2, packet: command)
            BTSnoopWriter.appendRecord(to: &expected, timestamp: Self.start + 1_500, flags: 0x3, packet: [0x04] + event)
            #expect(Array(bytes) == expected)
        }
    }

    @Test func buffersUntilTheFlushIntervalIsUp() throws {
        try withRecorder("b.btsnoop", keep: 1) { recorder, path in
            record(recorder, Self.event(1), at: Self.start)
            recorder.flushIfDue(now: MonotonicClock.micros())
            #expect(HCIRecordingFiles.size(path) == 16)
            recorder.flushIfDue(now: MonotonicClock.micros() + BTSnoopRecorder.flushInterval)
            #expect(HCIRecordingFiles.size(path) == 16 + 24 + 40)
            recorder.close()
        }
    }

    /// 40-byte packets make 64-byte records: four fit in 300 bytes with the header.
    @Test func rotatesKeepingAtMostKeepFiles() throws {
        func markers(_ file: String) throws -> [UInt8] { try HCIRecordingFiles.records(file).map { $0.bytes[3] } }
        try withRecorder("r.btsnoop", maxBytes: 300, keep: 2) { recorder, path throws in
            for marker in 0..<18 { record(recorder, Self.event(UInt8(marker)), at: Self.start + Int64(marker)) }
            recorder.close()
            #expect(recorder.rotations == 4)
            #expect(!HCIRecordingFiles.exists(path + ".3"))
            #expect(try markers(path + ".2") == [8, 9, 10, 11])
            #expect(try markers(path + ".1") == [12, 13, 14, 15])
            #expect(try markers(path) == [16, 17])
            for file in [path, path + ".1", path + ".2"] { #expect(HCIRecordingFiles.size(file) <= 300) }
        }
    }

    @Test func keepZeroStartsTheOneFileOver() throws {
        try withRecorder("z.btsnoop", maxBytes: 300, keep: 0) { recorder, path throws in
            for marker in 0..<10 { record(recorder, Self.event(UInt8(marker)), at: Self.start) }
            recorder.close()
            #expect(!HCIRecordingFiles.exists(path + ".1"))
            #expect(try HCIRecordingFiles.records(path).map { $0.bytes[3] } == [8, 9])
        }
    }

    @Test func anEarlierRecordingIsRotatedAwayAtStart() throws {
        try withRecorder("s.btsnoop", keep: 3) { first, path in
            record(first, Self.event(1), at: Self.start)
            first.close()
            let second = try BTSnoopRecorder(path: path, maxBytes: 1 << 20, keep: 3, logger: HCITestLogger.quiet)
            record(second, Self.event(2), at: Self.start)
            second.close()
            #expect(try HCIRecordingFiles.records(path + ".1").map { $0.bytes[3] } == [1])
            #expect(try HCIRecordingFiles.records(path).map { $0.bytes[3] } == [2])
        }
    }

    @Test func aFullDiskStopsTheRecordingOnceAndQuietly() throws {
        let (logger, logs) = CapturingLogHandler.logger()
        try withRecorder("f.btsnoop", keep: 1, logger: logger) { recorder, path in
            // The disk fills up: the recorder's descriptor now points at /dev/full.
            let full = open("/dev/full", O_WRONLY | O_CLOEXEC)
            try #require(full >= 0)
            #expect(dup2(full, recorder.descriptor) >= 0)
            close(full)
            record(recorder, Self.event(1), at: Self.start)
            recorder.flush()
            #expect(!recorder.isRecording)
            for marker in 2..<5 { record(recorder, Self.event(UInt8(marker)), at: Self.start) }
            recorder.flush()
            recorder.close()
            let errors = logs.at(.error)
            #expect(errors.count == 1)
            #expect(errors.first?.message.contains("No space left on device") == true)
            #expect(errors.first?.message.contains("scanning continues") == true)
        }
    }

    @Test func aPathThatCannotBeOpenedIsAStartError() {
        #expect(throws: BTSnoopRecorderError.self) {
            _ = try BTSnoopRecorder(
                path: "/nonexistent-dir/x.btsnoop", maxBytes: 1000, keep: 1, logger: HCITestLogger.quiet)
        }
    }
}
