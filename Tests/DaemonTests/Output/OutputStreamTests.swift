import Foundation
import Testing

@testable import BeacondClient
@testable import BeacondCore

#if canImport(Glibc)
import Glibc
#endif

@Suite struct OutputStreamTests {
    /// A non-blocking pipe that fills up (EAGAIN) makes the stream wait for the reader, and
    /// nothing written is lost or duplicated.
    @Test func aFullNonBlockingPipeWaitsForTheReaderAndLosesNothing() throws {
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        defer { close(ends[0]) }
        let flags = fcntl(ends[1], F_GETFL)
        #expect(fcntl(ends[1], F_SETFL, flags | O_NONBLOCK) == 0)
        let line = String(repeating: "x", count: 999) + "\n"
        let lines = 300 // 300 kB: several times a pipe's 64 KiB
        let reader = ends[0]
        let total = ByteCount()
        let finished = DispatchSemaphore(value: 0)
        // A thread of its own, not a task: the read blocks.
        Thread.detachNewThread {
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(reader, $0.baseAddress, $0.count) }
                if count <= 0 { break }
                total.value += count
            }
            finished.signal()
        }
        let output = OutputStream(fd: ends[1], bufferLimit: 8_192)
        for _ in 0..<lines { output.write(line) }
        output.flush()
        #expect(!output.readerGone)
        close(ends[1])
        finished.wait()
        #expect(total.value == lines * line.utf8.count)
    }

    private final class ByteCount: @unchecked Sendable {
        var value = 0
    }
}
