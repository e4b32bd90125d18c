import Foundation
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// `OutputStream`'s own buffer and write(2) loop (issue 15): partial writes into a blocking pipe
/// with a slow reader go on where they stopped, pieces larger than the buffer and cursors that
/// overflow are written whole, and a reader that went away stops the output without a trap.
@Suite struct OutputStreamWriteTests {
    /// Reads `fd` to its end on a thread of its own, `chunk` bytes at a time, pausing between reads.
    final class SlowReader: @unchecked Sendable {
        private(set) var bytes: [UInt8] = []
        private let done = DispatchSemaphore(value: 0)

        init(fd: Int32, chunk: Int, pauseMicros: UInt32) {
            Thread.detachNewThread {
                var buffer = [UInt8](repeating: 0, count: chunk)
                while true {
                    let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                    if count <= 0 { break }
                    self.bytes += buffer[0..<count]
                    if pauseMicros > 0 { usleep(pauseMicros) }
                }
                self.done.signal()
            }
        }

        func wait() -> [UInt8] {
            done.wait()
            return bytes
        }
    }

    static func pipeEnds() throws -> (read: Int32, write: Int32) {
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        return (ends[0], ends[1])
    }

    /// A blocking pipe (64 KiB) drained 1,000 bytes at a time: each 64 KiB flush is taken by the
    /// kernel in parts, and every byte arrives once, in order.
    @Test func partialWritesIntoASlowPipeLoseAndRepeatNothing() throws {
        let (readEnd, writeEnd) = try Self.pipeEnds()
        defer { close(readEnd) }
        let reader = SlowReader(fd: readEnd, chunk: 1000, pauseMicros: 50)
        let output = OutputStream(fd: writeEnd)
        var expected: [UInt8] = []
        for index in 0..<4000 {
            let line = Array("line \(index) \(String(repeating: "x", count: index % 97))\n".utf8)
            expected += line
            if index % 2 == 0 {
                output.write(line)
            } else {
                var cursor = output.cursor(reserving: line.count)
                line.withUnsafeBytes { cursor.appendBytes($0) }
                #expect(output.commit(cursor))
            }
        }
        output.flush()
        #expect(!output.readerGone)
        close(writeEnd)
        let received = reader.wait()
        #expect(received.count == expected.count)
        #expect(received == expected)
    }

    /// A piece larger than the whole buffer, and a cursor that reserved too little, still go out whole.
    @Test func piecesLargerThanTheBufferAndOverflowingCursorsAreWrittenWhole() throws {
        let (readEnd, writeEnd) = try Self.pipeEnds()
        defer { close(readEnd) }
        let reader = SlowReader(fd: readEnd, chunk: 65_536, pauseMicros: 0)
        let output = OutputStream(fd: writeEnd, bufferLimit: 4096)
        let large = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        output.write(large)
        // More than the buffer has grown to (300,000 bytes): the cursor overflows.
        let longer = large + large.prefix(100_000)
        var tooSmall = output.cursor(reserving: 10)
        for byte in longer { tooSmall.appendByte(byte) }
        #expect(tooSmall.overflowed)
        #expect(!output.commit(tooSmall), "an overflowed cursor is refused")
        output.write(reserving: 10) { cursor in
            for byte in longer { cursor.appendByte(byte) }
        }
        output.write("end\n")
        output.flush()
        close(writeEnd)
        let received = reader.wait()
        #expect(received.count == large.count + longer.count + 4)
        #expect(received == large + longer + Array("end\n".utf8))
    }

    /// With SIGPIPE ignored (as a parent may leave it), a closed reader is EPIPE: `readerGone`, and
    /// what follows is discarded, not an error or a trap. (SIGPIPE stays ignored in this test
    /// process: restoring the default could kill it while another test writes to a closed pipe.)
    @Test func aReaderThatWentAwayStopsTheOutput() throws {
        signal(SIGPIPE, SIG_IGN)
        let (readEnd, writeEnd) = try Self.pipeEnds()
        defer { close(writeEnd) }
        close(readEnd)
        let output = OutputStream(fd: writeEnd, bufferLimit: 100)
        output.write(String(repeating: "y", count: 1000))
        #expect(output.readerGone)
        output.write("more\n")
        output.flush()
        #expect(output.readerGone)
    }
}
