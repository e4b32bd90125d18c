import BeacondCore
import NIOCore
import NIOPosix
import Synchronization

/// `--metrics`: the latency run with the daemon's metrics on, as `beacond run --metrics` wires
/// them: the publish latency output on the hub (after the publisher's), and a scraper that
/// takes a scrape (the hop onto the hub's loop, the copy into the handles, the rendering) every
/// `interval`, far more often than Prometheus would, on a loop of its own like the endpoint's.
final class MetricsScraper: @unchecked Sendable {
    let metrics = DaemonMetrics()
    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    private let stopFlag = Atomic(false)
    private var thread: PosixThread?
    /// Whole scrapes, nanoseconds; written by the scraper thread, read after `stop()`.
    private(set) var durations: [Int64] = []
    /// The part of each spent on the hub's loop, nanoseconds.
    private(set) var loopDurations: [Int64] = []
    private(set) var bytes = 0

    func start(status: StatusBoard, interval: Int64 = 100_000_000) {
        let loop = group.next()
        thread = BenchThread.start { [self] in
            var next = BenchClock.nanos()
            while !stopFlag.load(ordering: .relaxed) {
                next += interval
                BenchClock.sleep(until: next)
                let started = BenchClock.nanos()
                guard let body = try? metrics.scrape(status: status, on: loop).wait() else { continue }
                durations.append(BenchClock.nanos() - started)
                loopDurations.append(metrics.lastLoopMicros.load(ordering: .relaxed) * 1000)
                bytes = body.count
            }
        }
    }

    func stop() {
        stopFlag.store(true, ordering: .relaxed)
        thread?.join()
        thread = nil
        try? group.syncShutdownGracefully()
    }

    /// The publish latency as the daemon's own histogram counted it.
    var histogramLines: [String] {
        String(decoding: metrics.render(), as: UTF8.self).split(separator: "\n")
            .filter { $0.hasPrefix("beacond_publish_latency_seconds_") && !$0.contains("le=\"0.0000") }
            .map(String.init)
    }
}
