import BeacondCore
import Glibc
import Synchronization

/// The floor under the HCI path's figure: the same events written in the same 1 ms ticks to a
/// socketpair with the kernel filter, and the same wake-ups on the other side with no beacond
/// work. A reader thread polls the socket, takes everything queued with recvmmsg
/// (`HCIReadBatch`) and throws it away, wakes a second thread through an eventfd, as each burst
/// wakes the hub's loop, and pauses as the scanner does (`HCIScannerConfiguration.burstPause`);
/// the second thread only drains the eventfd. CPU is both threads', as for the daemon's figure.
enum HCIFloorBench {
    struct Result {
        var cpu: Double
        var readerCPU: Double
        var hopCPU: Double
        var packets: Int
        var bursts: Int
    }

    /// `kernelFilter`: attached to the reading end, as the daemon's path has it.
    static func run(events: [[UInt8]], rate: Int, seconds: Double, kernelFilter: HCIKernelFilter?) throws -> Result {
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
            throw BenchFailure("socketpair: \(errnoText(errno))")
        }
        let (readEnd, writeEnd) = (pair[0], pair[1])
        defer { close(writeEnd) }
        let attached = Atomic<Int32>(-1)
        let hop = try WakeSignal()
        // Never signalled: the reader's pause after a burst.
        let pause = try WakeSignal()
        let stop = Atomic<Bool>(false)
        let packets = Atomic<Int>(0)
        let bursts = Atomic<Int>(0)
        let clocks = Mutex<(reader: clockid_t, hop: clockid_t)>((0, 0))

        let reader = BenchThread.start {
            var clock = clockid_t()
            pthread_getcpuclockid(pthread_self(), &clock)
            clocks.withLock { $0.reader = clock }
            let transport = DescriptorHCITransport(descriptor: readEnd)
            attached.store(kernelFilter.map { transport.attachReportFilter($0) } ?? 0, ordering: .relaxed)
            let batch = HCIReadBatch(capacity: 64, slotSize: 1024)
            var probe = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
            while !stop.load(ordering: .relaxed) {
                guard poll(&probe, 1, 50) > 0 else { continue }
                var read = 0
                draining: while true {
                    switch transport.readBatch(into: batch) {
                    case .packets(let count, let drained):
                        read += count
                        if drained { break draining }
                    default:
                        break draining
                    }
                }
                if read > 0 {
                    packets.add(read, ordering: .relaxed)
                    bursts.add(1, ordering: .relaxed)
                    hop.signal()
                    pause.wait(micros: HCIScannerConfiguration().burstPause)
                }
            }
        }
        let hopper = BenchThread.start {
            var clock = clockid_t()
            pthread_getcpuclockid(pthread_self(), &clock)
            clocks.withLock { $0.hop = clock }
            while !stop.load(ordering: .relaxed) {
                if hop.wait(micros: 50_000) { hop.drain() }
            }
        }
        BenchClock.sleep(seconds: 0.2)
        let code = attached.load(ordering: .relaxed)
        guard code == 0 else {
            stop.store(true, ordering: .relaxed)
            hop.signal()
            reader.join()
            hopper.join()
            throw BenchFailure("SO_ATTACH_FILTER: \(errnoText(code))")
        }
        let (readerClock, hopClock) = clocks.withLock { ($0.reader, $0.hop) }
        let readerBefore = HCIPathBench.cpuNanos(readerClock)
        let hopBefore = HCIPathBench.cpuNanos(hopClock)
        let start = BenchClock.nanos()
        var written = 0
        var index = 0
        let end = start + Int64(seconds * 1e9)
        while BenchClock.nanos() < end {
            let due = Int(Double(BenchClock.nanos() - start) / 1e9 * Double(rate))
            while written < due {
                let event = events[index]
                index = index + 1 == events.count ? 0 : index + 1
                _ = event.withUnsafeBytes { send(writeEnd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                written += 1
            }
            BenchClock.sleep(until: min(end, BenchClock.nanos() + 1_000_000))
        }
        let deadline = BenchClock.nanos() + 2_000_000_000
        while packets.load(ordering: .relaxed) < written, BenchClock.nanos() < deadline {
            BenchClock.sleep(seconds: 0.0005)
        }
        let elapsed = Double(BenchClock.nanos() - start) / 1e9
        let readerCPU = Double(HCIPathBench.cpuNanos(readerClock) - readerBefore) / 1e9 / elapsed * 100
        let hopCPU = Double(HCIPathBench.cpuNanos(hopClock) - hopBefore) / 1e9 / elapsed * 100
        stop.store(true, ordering: .relaxed)
        hop.signal()
        reader.join()
        hopper.join()
        return Result(
            cpu: readerCPU + hopCPU, readerCPU: readerCPU, hopCPU: hopCPU, packets: packets.load(ordering: .relaxed),
            bursts: bursts.load(ordering: .relaxed))
    }
}
