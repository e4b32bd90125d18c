import BeacondCore
import Glibc
import Synchronization

/// The kernel's share of a fan-out, as a reference for the latency run: one thread writes a
/// 400-byte line to each of `subscribers` Unix stream sockets, with the same readers as the
/// latency run waiting on the other ends, and times the whole round (no beacond code at all).
/// When every write wakes a reader sleeping on another thread, this alone can take longer than
/// the daemon's latency target; the daemon cannot beat it with one writer.
enum SocketFloorBench {
    static func run(subscribers: Int, readerThreads: Int, rounds: Int = 300) throws -> BenchStats? {
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
        let stop = StopFlag()
        let readers = pairs.map(\.reader)
        let threadCount = max(1, min(readerThreads, subscribers))
        let threads = (0..<threadCount).map { shard in
            BenchThread.start { [stop] in
                var polls = stride(from: shard, to: readers.count, by: threadCount).map {
                    pollfd(fd: readers[$0], events: Int16(POLLIN), revents: 0)
                }
                let buffer = UnsafeMutableRawPointer.allocate(byteCount: 65_536, alignment: 8)
                defer { buffer.deallocate() }
                while !stop.isSet {
                    guard poll(&polls, nfds_t(polls.count), 20) > 0 else { continue }
                    for index in polls.indices where polls[index].revents != 0 {
                        _ = recv(polls[index].fd, buffer, 65_536, Int32(MSG_DONTWAIT))
                    }
                }
            }
        }
        defer {
            stop.set()
            for thread in threads { thread.join() }
        }
        let line = [UInt8](repeating: UInt8(ascii: "x"), count: 399) + [UInt8(ascii: "\n")]
        var times: [Int64] = []
        times.reserveCapacity(rounds)
        for _ in 0..<rounds {
            let start = BenchClock.nanos()
            line.withUnsafeBytes { bytes in
                for pair in pairs { _ = write(pair.writer, bytes.baseAddress, bytes.count) }
            }
            times.append(BenchClock.nanos() - start)
            BenchClock.sleep(until: BenchClock.nanos() + 10_000_000)
        }
        return BenchStats(times)
    }
}

/// Tells reader threads to end.
private final class StopFlag: Sendable {
    private let flag = Atomic<Bool>(false)
    var isSet: Bool { flag.load(ordering: .relaxed) }
    func set() { flag.store(true, ordering: .relaxed) }
}
