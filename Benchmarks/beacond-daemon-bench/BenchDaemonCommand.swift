import ArgumentParser
import BeacondCore
import BenchmarkResults

/// `beacond-daemon-bench`: the speed targets of the daemon (issue 4, "Speed (benchmark)"),
/// measured on the real path: reports hop onto the hub's event loop and into `hub.ingest`, the
/// real `TrackStateServer` fans changes out over a real Unix socket, and client threads read them.
///
/// 1. Latency: `--rate` reports/s for `--duration` s with `--subscribers` connected; every 10 ms
///    one report changes the published state. Submit to each subscriber's read: p99 < 1 ms.
/// 2. Fan-out: `--fanout-changes` changes 100 ms apart to `--fanout-subscribers`: p99 < 50 ms.
/// 3. HCI path (`--only hci`): `--hci-rate` LE Advertising Report events/s through a socketpair,
///    the real HCI reader thread and `HubAdvertisementSink` into the hub: reader + loop < 50 % of a core.
/// 4. Status (`--only status`): a `status` reply built and rendered on the hub's loop with the
///    override table at its cap and the beacon directory full: p99 < 5 ms (issue 14).
/// 5. Idle: the daemon binary replays a small capture at max speed, then holds its state with
///    10 subscribers: CPU over `--idle-seconds` < 1 %, RSS < 30 MB.
/// 5. MQTT (`--only mqtt`, issue 16): the latency run's load with a state change every 1 ms, MQTT off
///    then on against a real mosquitto, `--mqtt-rounds` times: added CPU < 5 %, socket p99 unchanged.
@main
struct BenchDaemonCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "beacond-daemon-bench",
        abstract: "Benchmark the daemon's latency, fan-out and idle cost (run a release build)."
    )

    @Option(help: "Seconds of load in the latency run.")
    var duration: Double = 5

    @Option(help: "Reports per second in the latency run.")
    var rate: Int = 10_000

    @Option(help: "Subscribers connected in the latency run.")
    var subscribers: Int = 100

    @Option(name: .customLong("fanout-subscribers"), help: "Subscribers in the fan-out run.")
    var fanoutSubscribers: Int = 1_000

    @Option(name: .customLong("fanout-changes"), help: "State changes, 100 ms apart, in the fan-out run.")
    var fanoutChanges: Int = 50

    @Option(name: .customLong("idle-seconds"), help: "Seconds the idle daemon is watched.")
    var idleSeconds: Double = 10

    @Option(
        name: .customLong("fanout-previous-ms"),
        help: "The fan-out p99 to halve (issue 15), ms: by default the figure before the issue (docs/benchmarks.md).")
    var fanoutPreviousMillis: Double = SpeedGoal.previousFanOutP99Millis

    @Option(name: .customLong("hci-rate"), help: "Reports per second in the HCI path run.")
    var hciRate: Int = 50_000

    @Option(
        name: .customLong("reader-threads"),
        help: "Threads reading the subscribers' sockets; 0: one per subscriber, like separate kiosk processes.")
    var readerThreads: Int = 0

    @Flag(help: "Latency run with the daemon's metrics on: the latency observer, and a scrape every 100 ms.")
    var metrics = false

    @Option(name: .customLong("mqtt-rounds"), help: "Rounds of MQTT off then on in the mqtt run.")
    var mqttRounds: Int = 5

    @Option(help: "Runs to do: all, latency, fanout, hci, status, idle or mqtt (comma-separated).")
    var only: String = "all"

    @Option(help: "The beacond binary the idle run starts (default: the one beside this benchmark).")
    var beacond: String?

    @Flag(help: "Measure the paths before issue 15 (every line through the pipeline, one read per HCI packet).")
    var baseline = false

    @Option(help: "Also write the figures, as the `daemon` section of this JSON file.")
    var results: String?

    /// Caps that keep every figure's products (reports = rate × seconds, buffers, threads) far from
    /// overflow and the run finite; `inf` and `nan` are refused.
    static let maxSeconds = 3_600.0
    static let maxRate = 1_000_000
    static let maxSubscribers = 10_000
    static let maxChanges = 1_000

    func validate() throws {
        guard fanoutPreviousMillis > 0, fanoutPreviousMillis <= Self.maxSeconds * 1000 else {
            throw ValidationError("--fanout-previous-ms must be between 0 and \(Int(Self.maxSeconds * 1000))")
        }
        guard duration > 0, duration <= Self.maxSeconds, idleSeconds > 0, idleSeconds <= Self.maxSeconds else {
            throw ValidationError("--duration and --idle-seconds must be between 0 and \(Int(Self.maxSeconds)) seconds")
        }
        guard (1...Self.maxRate).contains(rate), (1...Self.maxRate).contains(hciRate),
            (1...Self.maxSubscribers).contains(subscribers), (1...Self.maxSubscribers).contains(fanoutSubscribers),
            (0...Self.maxSubscribers).contains(readerThreads), (1...Self.maxChanges).contains(fanoutChanges)
        else {
            throw ValidationError(
                "every figure must be positive: rates at most \(Self.maxRate), changes at most "
                    + "\(Self.maxChanges), subscribers and reader threads at most \(Self.maxSubscribers)")
        }
        let known: Set<Substring> = ["all", "latency", "fanout", "hci", "status", "idle", "mqtt"]
        guard only.split(separator: ",").allSatisfy({ known.contains($0) }) else {
            throw ValidationError("--only takes all, latency, fanout, hci, status, idle or mqtt")
        }
        guard (1...20).contains(mqttRounds) else { throw ValidationError("--mqtt-rounds must be between 1 and 20") }
    }

    func run() throws {
        let runs = Set(only.split(separator: ",").map(String.init))
        func wanted(_ name: String) -> Bool { runs.contains("all") || runs.contains(name) }
        var missed: [String] = []
        var figures = BenchmarkResults(section: "daemon")
        #if DEBUG
        print("warning: a debug build; the figures mean something only in release (swift build -c release)")
        #endif
        let cores = BenchProc.read("/proc/cpuinfo").map { Self.cores($0) } ?? "?"
        print("beacond-daemon-bench: \(cores) cores, load \(BenchProc.loadAverage())")
        BenchPipeline.baseline = baseline
        if baseline { print("baseline: the paths before issue 15 (no direct writes, one read per HCI packet)") }

        if wanted("latency") {
            let threads = readerThreads == 0 ? subscribers : readerThreads
            try runLatency(readerThreads: threads, key: "latency", figures: &figures, missed: &missed)
            if threads != 1 {
                // Issue 15's goal is set with one reader thread: that run too, under `latency_one_reader`.
                try runLatency(readerThreads: 1, key: "latency_one_reader", figures: &figures, missed: &missed)
            }
        }

        if wanted("fanout") {
            let result = try FanOutBench.run(
                subscribers: fanoutSubscribers, changes: fanoutChanges,
                readerThreads: readerThreads == 0 ? fanoutSubscribers : readerThreads)
            print(
                """
                fan-out   \(result.subscribers) subscribers (read by \(result.readerThreads) threads; connected \
                in \(format(result.connectSeconds, decimals: 2)) s), \(result.changes) changes 100 ms apart
                """
            )
            print(
                """
                          \(result.observed)/\(result.changes * result.subscribers) change×subscriber reads \
                observed; coalesced \(result.coalesced), wrong mode \(result.wrongMode), disconnected \
                \(result.disconnected)
                """
            )
            for line in result.delivery.lines { print(line) }
            print("          target p99 < 50 ms: \(result.met ? "met" : "MISSED")")
            figures.record(delivery: result.delivery, as: "fanout")
            if let goal = SpeedGoal.fanOut(result.delivery.stats, previousMillis: fanoutPreviousMillis) {
                goal.report(into: &figures, missed: &missed)
            }
            if !result.met { missed.append("fan-out") }
        }

        if wanted("hci") {
            let result = try HCIPathBench.run(rate: hciRate, seconds: duration)
            for (name, phase) in [
                ("paced, 1 ms ticks", result.paced), ("paced, 0.1 ms ticks", result.finePaced),
                ("unpaced", result.unpaced),
            ] {
                print(
                    """
                    hci path  \(name): \(phase.written) reports written in \(format(phase.seconds, decimals: 2)) \
                    s (\(Int(phase.writtenRate)) reports/s), \(phase.written - phase.expected) dropped by the kernel \
                    filter, \(phase.delivered) of \(phase.expected) delivered, \(phase.ingested) GeoRacing signals \
                    ingested, \(phase.dropped) dropped
                    """
                )
                print(
                    """
                              CPU: reader thread \(format(phase.readerCPU, decimals: 1)) % + hub loop \
                    \(format(phase.loopCPU, decimals: 1)) % = \(format(phase.cpu, decimals: 1)) % of one core; \
                    \(format(phase.reportsPerBurst, decimals: 1)) reports per read burst
                    """
                )
            }
            print(
                """
                          frame mix: half GeoRacing v1 from 50 beacons, half other devices (an iBeacon-like frame), \
                one report per event; the kernel filter on, as the daemon runs (scanner.kernel_filter)
                          malformed \(result.malformed); target \(result.rate) reports/s at < 50 % of one core: \
                \(result.met ? "met" : "MISSED")
                """
            )
            for (key, phase) in [
                ("paced", result.paced), ("fine_paced", result.finePaced), ("unpaced", result.unpaced),
            ] {
                figures.record("hci.\(key).written_rate", phase.writtenRate, unit: "reports/s")
                figures.record("hci.\(key).cpu", phase.cpu, unit: "%")
            }
            if !result.met { missed.append("hci path") }
            SpeedGoal.hci(cpu: result.paced.cpu, rate: result.rate)?.report(into: &figures, missed: &missed)
            try unfilteredHCIPath(reference: result, figures: &figures)
            try unpausedHCIPath(reference: result, figures: &figures)
            try hciFloor(reference: result, figures: &figures)
            try signedHCIPath(reference: result, figures: &figures)
            try twoAdapterHCIPath(reference: result, figures: &figures, missed: &missed)
        }

        if wanted("status") {
            let result = try StatusBench.run()
            print(
                """
                status    \(result.overrides) overrides, \(result.beacons) beacons: a \(result.bytes)-byte reply, \
                on the loop \(result.stats?.line ?? "no rounds")
                """
            )
            print("          " + result.goalLine)
            if let stats = result.stats {
                figures.record("status.loop.p50", Double(stats.p50) / 1e6, unit: "ms")
                figures.record("status.loop.p99", Double(stats.p99) / 1e6, unit: "ms")
            }
            figures.record("goals.status_loop_ms.met", result.met ? 1 : 0, unit: "bool")
            if !result.met { missed.append("issue 14 status") }
        }

        if wanted("idle") {
            let result = try IdleBench.run(
                daemon: try beacond ?? IdleBench.siblingDaemonPath(), subscribers: 10, seconds: idleSeconds)
            print(
                """
                idle      beacond run (pid \(result.pid), \(result.threads) threads), replay at max speed done in \
                \(format(result.replaySeconds, decimals: 2)) s, \(result.subscribers) subscribers, watched \
                \(format(result.seconds, decimals: 1)) s
                """
            )
            print(
                """
                          CPU \(format(result.cpuPercent, decimals: 2)) % (\(result.cpuTicks) ticks), wakeups \
                \(result.switches) (\(format(Double(result.switches) / result.seconds, decimals: 1))/s): \
                \(result.busiest.map { "\($0.name) \($0.switches)" }.joined(separator: ", "))
                """
            )
            print(
                """
                          RSS \(format(Double(result.rssKB) / 1024, decimals: 1)) MB (anon \
                \(format(Double(result.anonKB) / 1024, decimals: 1)) MB, file \
                \(format(Double(result.fileKB) / 1024, decimals: 1)) MB; peak \
                \(format(Double(result.peakRSSKB) / 1024, decimals: 1)) MB); exit after SIGTERM: \
                \(result.exitStatus.map { String($0) } ?? "still running, killed")
                """
            )
            print(
                """
                          target CPU < 1 %: \(result.cpuMet ? "met" : "MISSED"); RSS < 30 MB: \
                \(result.rssMet ? "met" : "MISSED")
                """
            )
            if !result.cpuMet { missed.append("idle CPU") }
            if !result.rssMet { missed.append("idle RSS") }
            figures.record("idle.cpu", result.cpuPercent, unit: "%")
            figures.record("idle.wakeups_per_second", Double(result.switches) / result.seconds, unit: "1/s")
            figures.record("idle.rss", Double(result.rssKB), unit: "KiB")
            figures.record("idle.peak_rss", Double(result.peakRSSKB), unit: "KiB")
        }
        if wanted("mqtt") { try runMqtt(figures: &figures, missed: &missed) }
        if let results {
            try figures.write(to: results)
            print("figures written to \(results)")
        }
        print(missed.isEmpty ? "all targets met" : "missed: \(missed.joined(separator: ", "))")
    }

    private static func cores(_ cpuinfo: String) -> String {
        String(cpuinfo.split(separator: "\n").filter { $0.hasPrefix("processor") }.count)
    }
}

extension BenchmarkResults {
    /// The delivery latencies of one run, in milliseconds.
    mutating func record(delivery: DeliveryFigures, as run: String) {
        for (key, stats) in [
            ("submit_to_read", delivery.stats), ("first_subscriber", delivery.firstSubscriber),
            ("last_subscriber", delivery.lastSubscriber),
        ] {
            guard let stats else { continue }
            record("\(run).\(key).p50", Double(stats.p50) / 1e6, unit: "ms")
            record("\(run).\(key).p99", Double(stats.p99) / 1e6, unit: "ms")
            record("\(run).\(key).max", Double(stats.max) / 1e6, unit: "ms")
        }
    }
}
