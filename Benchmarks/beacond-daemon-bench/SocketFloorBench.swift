import BeacondCore
import Glibc

/// The kernel's share of a fan-out, as the reference for the latency run, measured between the
/// same two points as the daemon's figure: one thread writes a state line (a line the daemon sent
/// in the latency run, with its seq renumbered) to each of `subscribers` Unix stream sockets, and
/// the same `BenchSubscriberReader`, with the same threads, reads and parses it on the other
/// ends. The clock starts before the first write and stops when the reader has parsed the line
/// (first and last subscriber per round), as the daemon's does from submit to read. No beacond
/// code runs: no engine, no event loop, no hop between threads (the daemon's figure includes its
/// hop from the submitting thread to the hub's loop, printed as "submit → loop pickup").
///
/// Before this, the reference stopped when the writer's last `write` returned (`writes` here):
/// the last reader had not read its line yet, so the ratio counted the reader's wake-up and
/// parsing against the daemon alone.
enum SocketFloorBench {
    struct Result {
        /// Writer start → reader parsed the line: every pair, first and last subscriber per round.
        var pairs: BenchStats?
        var firstSubscriber: BenchStats?
        var lastSubscriber: BenchStats?
        /// Writer start → its last `write` returned (the reference before).
        var writes: BenchStats?
        var observed: Int
        var expected: Int
        var lineBytes: Int

        var lines: [String] {
            [
                "write → read: \(pairs?.line ?? "none observed")",
                "\(observed)/\(expected) round×subscriber reads observed, \(lineBytes)-byte lines",
                "first subscriber per round: \(firstSubscriber?.line ?? "-")",
                "last subscriber per round: \(lastSubscriber?.line ?? "-")",
                "write → last write returned: \(writes?.line ?? "-")",
            ].map { "              " + $0 }
        }
    }

    /// `samples`: state lines the daemon sent, by change parity (odd: `[1]`); a synthetic line
    /// of the same shape when the run saw none.
    static func run(
        subscribers: Int, readerThreads: Int, samples: [[UInt8]?], rounds: Int = 300, spacing: Int64 = 10_000_000
    ) throws -> Result {
        var pairs: [(writer: Int32, reader: Int32)] = []
        defer {
            for pair in pairs {
                close(pair.writer)
                close(pair.reader)
            }
        }
        for _ in 0..<subscribers {
            var ends: [Int32] = [0, 0]
            guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends) == 0 else {
                throw BenchFailure("socketpair: \(errnoText(errno))")
            }
            pairs.append((ends[0], ends[1]))
        }
        let lines = (1...rounds).map { round in
            stateLine(seq: round, mode: BenchPipeline.expectedMode(round), sample: samples[round % 2] ?? nil)
        }
        let reader = BenchSubscriberReader(
            descriptors: pairs.map(\.reader), changes: rounds, baseSeq: 0, threads: readerThreads,
            expectedMode: BenchPipeline.expectedMode)
        reader.start()
        let started = UnsafeMutablePointer<Int64>.allocate(capacity: rounds)
        started.initialize(repeating: 0, count: rounds)
        defer { started.deallocate() }
        var writes: [Int64] = []
        writes.reserveCapacity(rounds)
        let writers = pairs.map(\.writer)
        var due = BenchClock.nanos() + 20_000_000
        for round in 0..<rounds {
            BenchClock.sleep(until: due)
            due += spacing
            let start = BenchClock.nanos()
            started[round] = start
            lines[round].withUnsafeBytes { bytes in
                for writer in writers { _ = write(writer, bytes.baseAddress, bytes.count) }
            }
            writes.append(BenchClock.nanos() - start)
        }
        reader.waitForAll(deadline: BenchClock.nanos() + 2_000_000_000)
        reader.stop()
        let (all, first, last) = reader.latencies(submitted: started)
        return Result(
            pairs: BenchStats(all), firstSubscriber: BenchStats(first), lastSubscriber: BenchStats(last),
            writes: BenchStats(writes), observed: reader.observed.load(ordering: .relaxed),
            expected: rounds * subscribers, lineBytes: lines.first?.count ?? 0)
    }

    /// `sample` with its top-level seq set to `seq` (the first `"seq":`, as the reader parses
    /// it); without a sample, a 400-byte line the reader accepts.
    static func stateLine(seq: Int, mode: String, sample: [UInt8]?) -> [UInt8] {
        let key = Array(#""seq":"#.utf8)
        if let sample, let found = firstRange(of: key, in: sample) {
            var end = found.upperBound
            while end < sample.count, sample[end] >= UInt8(ascii: "0"), sample[end] <= UInt8(ascii: "9") { end += 1 }
            return Array(sample[..<found.upperBound]) + Array(String(seq).utf8) + Array(sample[end...])
        }
        var line = Array(#"{"type":"state","seq":\#(seq),"mode":"\#(mode)","pad":""#.utf8)
        line += [UInt8](repeating: UInt8(ascii: "x"), count: max(0, 397 - line.count))
        return line + Array("\"}\n".utf8)
    }

    private static func firstRange(of needle: [UInt8], in haystack: [UInt8]) -> Range<Int>? {
        guard haystack.count >= needle.count else { return nil }
        for start in 0...(haystack.count - needle.count)
        where haystack[start..<(start + needle.count)].elementsEqual(needle) {
            return start..<(start + needle.count)
        }
        return nil
    }
}
