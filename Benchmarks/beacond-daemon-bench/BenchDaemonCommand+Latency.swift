import BenchmarkResults

extension BenchDaemonCommand {
    /// The latency run with `readerThreads` threads reading the subscribers, its kernel-alone
    /// reference, and (with one reader thread, as issue 15 sets it) the goal's ratio; figures under `key`.
    func runLatency(readerThreads: Int, key: String, figures: inout BenchmarkResults, missed: inout [String]) throws {
        let result = try LatencyBench.run(
            subscribers: subscribers, rate: rate, duration: duration, readerThreads: readerThreads,
            metrics: metrics)
        print(
            """
            latency   \(result.subscribers) subscribers (read by \(result.readerThreads) threads), \
            \(result.rate) reports/s for \(format(result.duration, decimals: 1)) s
            """
        )
        print(
            """
                      \(result.reports) reports submitted, \(result.ingested) ingested, achieved \
            \(Int(result.achievedRate)) reports/s; producer lag \
            \(result.producerLag.map { "p99 \(BenchStats.ms($0.p99)) max \(BenchStats.ms($0.max))" } ?? "-")
            """
        )
        print(
            """
                      \(result.changes) changes (\(result.published) published in all), \
            \(result.observed)/\(result.changes * result.subscribers) change×subscriber reads observed; \
            coalesced \(result.coalesced), wrong mode \(result.wrongMode), unexpected seq \
            \(result.unexpected), disconnected \(result.disconnected)
            """
        )
        print("          event loop thread CPU \(result.loopCPU.map { format($0, decimals: 1) + " %" } ?? "?")")
        for line in result.delivery.lines { print(line) }
        if metrics {
            print(
                """
                          metrics on: \(result.scrapes?.count ?? 0) scrapes (every 100 ms) of \
                \(result.scrapeBytes) bytes: \(result.scrapes?.line ?? "-")
                """
            )
            print("          ... of which on the hub's loop: \(result.scrapesOnLoop?.line ?? "-")")
            for line in result.histogram { print("          " + line) }
        }
        let reference = try SocketFloorBench.run(
            subscribers: result.subscribers, readerThreads: result.readerThreads, samples: result.samples)
        print(
            """
                      reference, the kernel alone: one thread writing the same state line to each of \
            \(result.subscribers) sockets, read by the same reader (\(result.readerThreads) threads), no beacond:
            """
        )
        for line in reference.lines { print(line) }
        let floor = reference.lastSubscriber
        print(
            """
                      target p99 < 1 ms at \(result.rate)/s with \(result.subscribers) subscribers: \
            \(result.met ? "met" : "MISSED")
            """
        )
        figures.record(delivery: result.delivery, as: key)
        figures.record("\(key).achieved_rate", result.achievedRate, unit: "reports/s")
        figures.record("\(key).loop_cpu", result.loopCPU ?? .nan, unit: "%")
        if let floor {
            figures.record("\(key).kernel_alone.p50", Double(floor.p50) / 1e6, unit: "ms")
            figures.record("\(key).kernel_alone.p99", Double(floor.p99) / 1e6, unit: "ms")
        }
        if let writes = reference.writes {
            figures.record("\(key).kernel_alone.writes_p99", Double(writes.p99) / 1e6, unit: "ms")
        }
        if readerThreads == 1 {
            SpeedGoal.latency(lastSubscriber: result.delivery.lastSubscriber, kernel: floor)?.report(
                into: &figures, missed: &missed)
        }
        if !result.met { missed.append(key) }
    }
}
