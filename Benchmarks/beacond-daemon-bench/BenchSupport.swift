import BeacondCore
import Glibc
import Synchronization

/// Small tools of `beacond bench-daemon`: a nanosecond clock, plain threads, percentiles,
/// and readings from /proc.
enum BenchClock {
    /// CLOCK_MONOTONIC, nanoseconds.
    static func nanos() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
    }

    /// The calling thread's CPU time, nanoseconds.
    static func threadCPUNanos() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &spec)
        return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
    }

    /// Sleeps until CLOCK_MONOTONIC reaches `deadline` (nanoseconds).
    static func sleep(until deadline: Int64) {
        var spec = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &spec, nil) == EINTR {}
    }

    static func sleep(seconds: Double) {
        sleep(until: nanos() + Int64(seconds * 1_000_000_000))
    }
}

/// A benchmark's thread: one that must start, or the benchmark cannot run.
enum BenchThread {
    static func start(_ body: @escaping @Sendable () -> Void) -> PosixThread {
        do {
            return try PosixThread.start(detached: false, body)
        } catch {
            fatalError("pthread_create failed: \(errnoText(error.code))")
        }
    }
}

/// Latencies in nanoseconds, summarised.
struct BenchStats {
    let count: Int
    let p50: Int64
    let p99: Int64
    let max: Int64
    let mean: Double

    init?(_ values: [Int64]) {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        count = sorted.count
        // Nearest rank.
        func rank(_ q: Double) -> Int64 {
            sorted[Swift.max(0, Swift.min(sorted.count - 1, Int((q * Double(sorted.count)).rounded(.up)) - 1))]
        }
        p50 = rank(0.50)
        p99 = rank(0.99)
        max = sorted[sorted.count - 1]
        mean = Double(sorted.reduce(0, +)) / Double(sorted.count)
    }

    static func ms(_ nanos: Int64) -> String { ms(Double(nanos)) }
    static func ms(_ nanos: Double) -> String { format(nanos / 1_000_000, decimals: 3) + " ms" }

    var line: String { "p50 \(Self.ms(p50))  p99 \(Self.ms(p99))  max \(Self.ms(max))  mean \(Self.ms(mean))" }
}

/// Fixed-point formatting without Foundation's locale.
func format(_ value: Double, decimals: Int) -> String {
    guard value.isFinite else { return "\(value)" }
    var scale = 1.0
    for _ in 0..<decimals { scale *= 10 }
    let scaled = (abs(value) * scale).rounded()
    let whole = Int(scaled / scale)
    let fraction = Int(scaled - Double(whole) * scale)
    var text = (value < 0 && scaled > 0 ? "-" : "") + String(whole)
    if decimals > 0 {
        let digits = String(fraction)
        text += "." + String(repeating: "0", count: Swift.max(0, decimals - digits.count)) + digits
    }
    return text
}

/// Readings of /proc for one process or thread.
enum BenchProc {
    static let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

    static func read(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress!, $0.count) }
            if count <= 0 { break }
            bytes.append(contentsOf: chunk[0..<count])
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// utime + stime in clock ticks, from a `stat` file (a process's covers all its threads).
    static func cpuTicks(statPath: String) -> Int? {
        guard let text = read(statPath), let close = text.lastIndex(of: ")") else { return nil }
        // Fields after the command: state is field 3, utime 14, stime 15.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Int(fields[11]), let system = Int(fields[12]) else { return nil }
        return user + system
    }

    /// A `Key:   value kB` field of a `status` file, as a number.
    static func statusField(_ key: String, path: String) -> Int? {
        guard let text = read(path) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix(key + ":") {
            let value = line.dropFirst(key.count + 1).split(whereSeparator: { $0 == " " || $0 == "\t" }).first
            return value.flatMap { Int($0) }
        }
        return nil
    }

    struct ThreadSample {
        var name: String
        var ticks: Int
        var switches: Int
    }

    /// Every thread of `pid`: name, CPU ticks, and voluntary + involuntary context switches.
    static func threads(of pid: Int32) -> [Int: ThreadSample] {
        var result: [Int: ThreadSample] = [:]
        for (name, _) in DirectoryEntries.list("/proc/\(pid)/task") ?? [] {
            guard let tid = Int(name) else { continue }
            let base = "/proc/\(pid)/task/\(tid)"
            let comm = read(base + "/comm")?.trimmingSuffixNewline() ?? "?"
            let voluntary = statusField("voluntary_ctxt_switches", path: base + "/status") ?? 0
            let involuntary = statusField("nonvoluntary_ctxt_switches", path: base + "/status") ?? 0
            result[tid] = ThreadSample(
                name: comm, ticks: cpuTicks(statPath: base + "/stat") ?? 0,
                switches: voluntary + involuntary)
        }
        return result
    }

    /// The calling thread's id, from /proc/thread-self.
    static func currentThreadID() -> Int? {
        var buffer = [UInt8](repeating: 0, count: 256)
        let count = buffer.withUnsafeMutableBufferPointer { raw in
            raw.baseAddress!.withMemoryRebound(to: CChar.self, capacity: raw.count) {
                readlink("/proc/thread-self", $0, raw.count)
            }
        }
        guard count > 0 else { return nil }
        let text = String(decoding: buffer[0..<count], as: UTF8.self)
        return text.split(separator: "/").last.flatMap { Int($0) }
    }

    static func loadAverage() -> String {
        read("/proc/loadavg").map { $0.split(separator: " ").prefix(3).joined(separator: " ") } ?? "?"
    }
}

extension String {
    fileprivate func trimmingSuffixNewline() -> String {
        var text = self
        while text.last == "\n" { text.removeLast() }
        return text
    }
}

/// Reads the state lines every subscriber receives: stamps each read with CLOCK_MONOTONIC and
/// records, per subscriber and per expected change, when its line arrived. Change `k` (1-based)
/// is the state with `seq == baseSeq + k` and mode `expectedMode(k)`.
///
/// The subscribers are split over `threads` reader threads, each waiting in poll(2) on its share.
/// One thread per subscriber models what the daemon serves: kiosks are separate processes, each
/// blocked on its own socket. One thread for all of them instead measures a single client that
/// scans every socket on each wakeup, whose own cost grows with the number of sockets.
final class BenchSubscriberReader: @unchecked Sendable {
    let descriptors: [Int32]
    let changes: Int
    let baseSeq: Int
    private let expectedModes: [[UInt8]]
    /// `arrivals[subscriber * changes + (k - 1)]`: nanoseconds, 0 until seen.
    let arrivals: UnsafeMutablePointer<Int64>
    /// Pairs seen so far (readable from other threads).
    let observed = Atomic<Int>(0)
    private let stopFlag = Atomic<Bool>(false)
    private let wrongModes = Atomic<Int>(0)
    private let unexpectedSeqs = Atomic<Int>(0)
    private let closedEarlyCount = Atomic<Int>(0)
    let threadCount: Int
    private var threads: [PosixThread] = []
    /// The first state line subscriber 0 read for an even change (`[0]`) and an odd one (`[1]`),
    /// with its newline: the kernel-alone reference writes the same lines. Read after `stop()`.
    private(set) var samples: [[UInt8]?] = [nil, nil]

    var wrongMode: Int { wrongModes.load(ordering: .relaxed) }
    var unexpectedSeq: Int { unexpectedSeqs.load(ordering: .relaxed) }
    var closedEarly: Int { closedEarlyCount.load(ordering: .relaxed) }

    init(descriptors: [Int32], changes: Int, baseSeq: Int, threads: Int, expectedMode: (Int) -> String) {
        self.descriptors = descriptors
        self.changes = changes
        self.baseSeq = baseSeq
        threadCount = max(1, min(threads, descriptors.count))
        expectedModes = (0...changes).map { Array(expectedMode($0).utf8) }
        let slots = max(1, descriptors.count * changes)
        arrivals = .allocate(capacity: slots)
        arrivals.initialize(repeating: 0, count: slots)
    }

    deinit {
        arrivals.deallocate()
    }

    func start() {
        threads = (0..<threadCount).map { shard in
            BenchThread.start { [self] in
                run(subscribers: Array(stride(from: shard, to: descriptors.count, by: threadCount)))
            }
        }
    }

    /// Stops the threads and waits for them.
    func stop() {
        stopFlag.store(true, ordering: .relaxed)
        for thread in threads { thread.join() }
    }
    /// Waits until every (change × subscriber) pair was seen or `deadline` (nanoseconds) passes.
    func waitForAll(deadline: Int64) {
        let expected = descriptors.count * changes
        while observed.load(ordering: .relaxed) < expected, BenchClock.nanos() < deadline {
            BenchClock.sleep(until: BenchClock.nanos() + 1_000_000)
        }
    }

    /// Latencies of every pair seen, against `submitted[k - 1]`; and per change, the latency of
    /// its first subscriber and of its last (changes seen by every subscriber only).
    func latencies(submitted: UnsafeMutablePointer<Int64>)
        -> (pairs: [Int64], firstSubscriber: [Int64], lastSubscriber: [Int64])
    {
        var pairs: [Int64] = []
        pairs.reserveCapacity(descriptors.count * changes)
        var firstSubscriber: [Int64] = []
        var lastSubscriber: [Int64] = []
        for change in 0..<changes {
            var earliest = Int64.max
            var latest: Int64 = 0
            var complete = true
            for subscriber in 0..<descriptors.count {
                let arrival = arrivals[subscriber * changes + change]
                if arrival == 0 { complete = false; continue }
                let latency = arrival - submitted[change]
                pairs.append(latency)
                earliest = min(earliest, latency)
                latest = max(latest, latency)
            }
            if earliest != .max { firstSubscriber.append(earliest) }
            if complete { lastSubscriber.append(latest) }
        }
        return (pairs, firstSubscriber, lastSubscriber)
    }

    private func run(subscribers: [Int]) {
        var polls = subscribers.map { pollfd(fd: descriptors[$0], events: Int16(POLLIN), revents: 0) }
        var pending = [[UInt8]](repeating: [], count: subscribers.count)
        let chunkSize = 64 * 1024
        let chunk = UnsafeMutablePointer<UInt8>.allocate(capacity: chunkSize)
        defer { chunk.deallocate() }
        while !stopFlag.load(ordering: .relaxed) {
            let ready = poll(&polls, nfds_t(polls.count), 20)
            if ready <= 0 { continue }
            for index in polls.indices where polls[index].revents != 0 {
                let count = recv(polls[index].fd, chunk, chunkSize, Int32(MSG_DONTWAIT))
                let now = BenchClock.nanos()
                if count == 0 || (count < 0 && errno != EAGAIN && errno != EINTR) {
                    closedEarlyCount.add(1, ordering: .relaxed)
                    polls[index].fd = -1
                    continue
                }
                if count < 0 { continue }
                pending[index].append(contentsOf: UnsafeBufferPointer(start: chunk, count: count))
                consumeLines(&pending[index], subscriber: subscribers[index], at: now)
            }
        }
    }

    private static let statePrefix = Array(#"{"type":"state""#.utf8)
    private static let seqKey = Array(#""seq":"#.utf8)
    private static let modeKey = Array(#""mode":""#.utf8)

    private func consumeLines(_ buffer: inout [UInt8], subscriber: Int, at now: Int64) {
        var start = 0
        while let newline = buffer[start...].firstIndex(of: UInt8(ascii: "\n")) {
            handle(buffer[start..<newline], subscriber: subscriber, at: now)
            start = newline + 1
        }
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
        } else if start > 0 {
            buffer.removeFirst(start)
        }
    }

    /// Where `needle` first occurs in `line`: a plain scan over the bytes (the generic
    /// `firstRange(of:)` costs microseconds per line, and the reader must not be slower than the
    /// daemon it measures).
    private static func find(_ needle: [UInt8], in line: ArraySlice<UInt8>) -> Range<Int>? {
        guard let first = needle.first else { return nil }
        return line.withUnsafeBufferPointer { haystack -> Range<Int>? in
            let last = haystack.count - needle.count
            guard last >= 0 else { return nil }
            var index = 0
            search: while index <= last {
                if haystack[index] == first {
                    for offset in 1..<needle.count where haystack[index + offset] != needle[offset] {
                        index += 1
                        continue search
                    }
                    return (line.startIndex + index)..<(line.startIndex + index + needle.count)
                }
                index += 1
            }
            return nil
        }
    }

    private func handle(_ line: ArraySlice<UInt8>, subscriber: Int, at now: Int64) {
        guard line.starts(with: Self.statePrefix) else { return }
        // The top-level seq and mode come before the nested beacon's.
        guard let seqRange = Self.find(Self.seqKey, in: line) else {
            unexpectedSeqs.add(1, ordering: .relaxed)
            return
        }
        var seq = 0
        var cursor = seqRange.upperBound
        while cursor < line.endIndex, line[cursor] >= UInt8(ascii: "0"), line[cursor] <= UInt8(ascii: "9") {
            seq = seq * 10 + Int(line[cursor] - UInt8(ascii: "0"))
            cursor += 1
        }
        let change = seq - baseSeq
        guard change >= 1, change <= changes else {
            unexpectedSeqs.add(1, ordering: .relaxed)
            return
        }
        guard let modeRange = Self.find(Self.modeKey, in: line) else {
            wrongModes.add(1, ordering: .relaxed)
            return
        }
        let modeEnd = line[modeRange.upperBound...].firstIndex(of: UInt8(ascii: "\"")) ?? line.endIndex
        if !line[modeRange.upperBound..<modeEnd].elementsEqual(expectedModes[change]) {
            wrongModes.add(1, ordering: .relaxed)
        }
        if subscriber == 0, samples[change % 2] == nil { samples[change % 2] = Array(line) + [UInt8(ascii: "\n")] }
        let slot = subscriber * changes + (change - 1)
        if arrivals[slot] == 0 {
            arrivals[slot] = now
            observed.wrappingAdd(1, ordering: .relaxed)
        }
    }
}

/// What the fan-out run measured (`FanOutBench`).
struct FanOutResult {
    var subscribers: Int
    var readerThreads: Int
    var changes: Int
    var observed: Int
    var connectSeconds: Double
    var delivery: DeliveryFigures
    var coalesced: Int
    var wrongMode: Int
    var disconnected: Int

    var met: Bool { (delivery.stats?.p99 ?? .max) < 50_000_000 && observed == changes * subscribers }
}

struct BenchFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
