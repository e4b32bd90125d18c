import BeacondCore
import BenchmarkResults
import Glibc
import Logging

/// `--only mqtt` (issue 16, "Speed"): publishing 1,000 state changes per second to a real broker adds
/// less than 5 % of one core, and the socket path's p99 is unchanged within noise, MQTT on versus off.
///
/// One Mosquitto for the run (`BenchBroker`), then phases in this process alternated off, on, off, on …
/// (`rounds` of each, `seconds` each, after an unrecorded warm-up), so a drift of the machine's load
/// falls on both. Each phase is a fresh `BenchPipeline` with `subscribers` socket subscribers and the
/// latency run's load: `rate` reports/s, of which the changing beacon's alternate modes every 1 ms. In an
/// "on" phase a real `MqttPublisher` is attached to the hub (after the socket publisher, as the daemon
/// does) and connected before the load starts. A watcher client on the broker counts the states that
/// reached it; an "on" phase passes only if the last state published did.
///
/// CPU counted: the whole process (CLOCK_PROCESS_CPUTIME_ID: the hub's loop, the producer standing in
/// for the scanner, the MQTT network thread, anything else the publisher adds) minus the
/// subscriber-reader threads (the kiosks, separate processes in real life) and the watcher's thread
/// (race control's `beacond venue`), each read from /proc/self/task/<tid>/schedstat over the load.
/// The broker is another process: its CPU is printed, not counted.
///
/// MQTT's own share is also measured where it is spent: the threads `MqttPublisher.start()` adds, plus
/// the hub loop's thread CPU time inside MQTT's observers (`LoopHookTimer`). The rest of on − off is
/// what MQTT's work costs the other threads, or the machine's noise (the off rounds' spread says which).
enum MqttBench {
    static let topicPrefix = "bench"
    static let changeInterval = 0.001
    /// `--duration` is capped here: the changing beacon's 16-bit sequence must not wrap within a phase.
    static let maxPhaseSeconds = 30.0

    struct Phase {
        var mqtt: Bool
        var seconds: Double
        var changes: Int
        var observed: Int
        var subscribers: Int
        /// Counted CPU (see above), % of one core.
        var cpu: Double
        var loopCPU: Double?
        /// The threads `MqttPublisher.start()` added.
        var mqttThreadsCPU: Double
        /// The loop's time in the observers `LoopHookTimer` brackets (MQTT's, in an "on" phase).
        var loopHookCPU: Double
        var readersCPU: Double
        var brokerCPU: Double?
        var delivery: DeliveryFigures
        var socketCoalesced: Int
        var status: MqttStatus?
        /// States the watcher received from this phase's node, and whether the last one published was among them.
        var received = 0
        var delivered = false
    }

    struct Result {
        var phases: [Phase]
        var subscribers: Int
        var readerThreads: Int
        var rate: Int

        var off: [Phase] { phases.filter { !$0.mqtt } }
        var on: [Phase] { phases.filter(\.mqtt) }
        static func mean(_ values: [Double]) -> Double {
            values.isEmpty ? .nan : values.reduce(0, +) / Double(values.count)
        }
        static func median(_ values: [Double]) -> Double {
            let sorted = values.sorted()
            guard !sorted.isEmpty else { return .nan }
            let middle = sorted.count / 2
            return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
        }
        static func p99s(_ phases: [Phase]) -> [Double] {
            phases.compactMap { $0.delivery.lastSubscriber.map { Double($0.p99) / 1e6 } }
        }
        /// Medians: a round the machine slowed as a whole (the loop and the readers together, several %
        /// of a core on this VM) moves a mean, not a median.
        var addedCPU: Double { Self.median(on.map(\.cpu)) - Self.median(off.map(\.cpu)) }
        /// The loop's time in MQTT's observers, beyond the bracketing's own cost.
        var loopHookCPU: Double { Self.mean(on.map(\.loopHookCPU)) - Self.mean(off.map(\.loopHookCPU)) }
        /// MQTT's CPU where it is spent: its threads and its hooks on the loop.
        var attributedCPU: Double { Self.mean(on.map(\.mqttThreadsCPU)) + loopHookCPU }
        /// The spread between the off rounds' counted CPU, % of one core.
        var cpuNoise: Double { (off.map(\.cpu).max() ?? .nan) - (off.map(\.cpu).min() ?? .nan) }
        var offP99: Double { Self.mean(Self.p99s(off)) }
        var onP99: Double { Self.mean(Self.p99s(on)) }
        /// The spread between the off rounds' p99s, ms.
        var noise: Double { (Self.p99s(off).max() ?? .nan) - (Self.p99s(off).min() ?? .nan) }
        /// Every "on" phase got its last state to the broker, and every phase measured a p99.
        var delivered: Bool {
            !on.isEmpty && on.allSatisfy(\.delivered) && Self.p99s(phases).count == phases.count
        }
    }

    /// nil when no mosquitto is installed.
    static func run(subscribers: Int, rate: Int, seconds: Double, rounds: Int, readerThreads: Int) throws -> Result? {
        guard let binary = BenchBroker.locate() else { return nil }
        let broker = try BenchBroker(binary: binary)
        defer { broker.stop() }
        let watcher = try BenchStateWatcher(url: broker.url, prefix: topicPrefix)
        let beforeWatcher = BenchTasks.ids()
        try watcher.start(within: 5)
        defer { watcher.stop() }
        let excluded = BenchTasks.ids().subtracting(beforeWatcher)
        let setup = Setup(
            broker: broker, watcher: watcher, watcherThreads: excluded, subscribers: subscribers, rate: rate,
            readerThreads: readerThreads)
        _ = try phase(setup, mqtt: false, name: "warm-up", seconds: min(1, seconds))
        var phases: [Phase] = []
        for round in 1...max(1, rounds) {
            phases.append(try phase(setup, mqtt: false, name: "off-\(round)", seconds: seconds))
            phases.append(try phase(setup, mqtt: true, name: "on-\(round)", seconds: seconds))
        }
        return Result(phases: phases, subscribers: subscribers, readerThreads: readerThreads, rate: rate)
    }

    private struct Setup {
        var broker: BenchBroker
        var watcher: BenchStateWatcher
        var watcherThreads: Set<Int>
        var subscribers: Int
        var rate: Int
        var readerThreads: Int
    }

    private static func phase(_ setup: Setup, mqtt: Bool, name: String, seconds: Double) throws -> Phase {
        let node = "bench-\(getpid())-\(name)"
        var publisher: MqttPublisher?
        let hooks = LoopHookTimer()
        let pipeline = try BenchPipeline(beforeStart: { hub in
            guard mqtt else { return [hooks.begin, hooks.end] }
            var settings = DaemonConfiguration.Mqtt()
            settings.url = setup.broker.url
            settings.node = node
            settings.topicPrefix = topicPrefix
            let made = try MqttPublisher(
                settings: settings, eventLoop: hub.eventLoop,
                logger: Logger(label: "bench.mqtt", factory: { _ in SwiftLogNoOpLogHandler() }))
            publisher = made
            return [hooks.begin, made, hooks.end]
        })
        defer { pipeline.close() }
        let beforeMqtt = BenchTasks.ids()
        try publisher?.start()
        defer { publisher?.stop() }
        let mqttThreads = BenchTasks.ids().subtracting(beforeMqtt)
        if let publisher {
            let deadline = BenchClock.nanos() + 5_000_000_000
            while !publisher.outbox.status.connected, BenchClock.nanos() < deadline { BenchClock.sleep(seconds: 0.01) }
            guard publisher.outbox.status.connected else {
                let status = publisher.outbox.status
                throw BenchFailure(
                    "mqtt: the publisher did not connect to \(setup.broker.url): \(status.lastError ?? "-")")
            }
        }
        let baseSeq = try pipeline.warmUp()
        let clients = try pipeline.connectSubscribers(setup.subscribers, expectingSeq: baseSeq)
        defer { for client in clients { client.close() } }

        let total = max(1, Int(Double(setup.rate) * seconds))
        let changeEvery = max(1, Int((Double(setup.rate) * changeInterval).rounded()))
        let changes = total / changeEvery
        let timeline = BenchTimeline(capacity: changes)
        let reader = BenchSubscriberReader(
            descriptors: clients.map(\.descriptor), changes: changes, baseSeq: baseSeq,
            threads: setup.readerThreads, expectedMode: BenchPipeline.expectedMode)
        let beforeReaders = BenchTasks.ids()
        reader.start()
        let readerThreads = BenchTasks.ids().subtracting(beforeReaders)
        let loopThread = try pipeline.loopThreadID()

        let hooksBefore = try pipeline.onLoop { hooks.total }
        let before = BenchTasks.Sample(
            readers: readerThreads, excluded: setup.watcherThreads, loop: loopThread, mqtt: mqttThreads,
            broker: setup.broker)
        pipeline.produce(timeline: timeline, rate: setup.rate, total: total, changeEvery: changeEvery)
        let hooksAfter = try pipeline.onLoop { hooks.total }
        let after = BenchTasks.Sample(
            readers: readerThreads, excluded: setup.watcherThreads, loop: loopThread, mqtt: mqttThreads,
            broker: setup.broker)
        reader.waitForAll(deadline: BenchClock.nanos() + 2_000_000_000)
        reader.stop()
        let figures = try pipeline.figures()
        let finalSeq = try pipeline.onLoop { [hub = pipeline.hub] in hub.seq }
        let wall = Double(after.wall - before.wall)
        func percent(_ nanos: Int64) -> Double { Double(nanos) / wall * 100 }
        var result = Phase(
            mqtt: mqtt, seconds: wall / 1e9, changes: timeline.changes,
            observed: reader.observed.load(ordering: .relaxed), subscribers: setup.subscribers,
            cpu: percent(
                (after.process - before.process) - (after.readers - before.readers)
                    - (after.excluded - before.excluded)),
            loopCPU: after.loop.flatMap { a in before.loop.map { percent(a - $0) } },
            mqttThreadsCPU: percent(after.mqtt - before.mqtt), loopHookCPU: percent(hooksAfter - hooksBefore),
            readersCPU: percent(after.readers - before.readers),
            brokerCPU: after.broker.flatMap { a in before.broker.map { percent(a - $0) } },
            delivery: DeliveryFigures(reader: reader, timeline: timeline), socketCoalesced: figures.coalescedStates)
        if let publisher {
            result.delivered = setup.watcher.waitFor(node: node, seq: finalSeq, seconds: 3)
            result.received = setup.watcher.received(node: node).messages
            result.status = publisher.outbox.status
        }
        return result
    }
}

/// Times the hub's MQTT output on its loop, in the loop thread's CPU time (a wall clock would count
/// the time a woken thread preempted it): outputs connected before and after it (in an "off" phase
/// around nothing, so the bracketing's own cost cancels out). Loop only.
final class LoopHookTimer: @unchecked Sendable {
    private var started: Int64 = 0
    private(set) var total: Int64 = 0
    private(set) lazy var begin: any HubOutput = Hook { [unowned self] in started = Self.threadNanos() }
    private(set) lazy var end: any HubOutput = Hook { [unowned self] in total += Self.threadNanos() - started }

    /// Runs `body` for every event, and wants beacon updates as the MQTT output does.
    private final class Hook: HubOutput {
        let body: () -> Void
        init(_ body: @escaping () -> Void) { self.body = body }
        var wantsBeaconUpdates: Bool { true }
        func receive(_ event: HubEvent) { body() }
    }

    private static func threadNanos() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &spec)
        return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
    }
}

/// This process's threads and their CPU time.
enum BenchTasks {
    static func ids() -> Set<Int> {
        Set((DirectoryEntries.list("/proc/self/task") ?? []).compactMap { Int($0.name) })
    }

    /// A thread's CPU time, nanoseconds: schedstat's first field, else stat's ticks; 0 once it is gone.
    static func cpuNanos(_ tid: Int) -> Int64 {
        let base = "/proc/self/task/\(tid)/"
        if let text = BenchProc.read(base + "schedstat"), let first = text.split(separator: " ").first,
            let nanos = Int64(first)
        {
            return nanos
        }
        let ticks = BenchProc.cpuTicks(statPath: base + "stat") ?? 0
        return Int64(Double(ticks) / BenchProc.ticksPerSecond * 1e9)
    }

    static func processCPUNanos() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &spec)
        return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
    }

    /// CPU times at one instant, nanoseconds.
    struct Sample {
        var wall: Int64
        var process: Int64
        var readers: Int64
        var excluded: Int64
        var loop: Int64?
        var mqtt: Int64
        var broker: Int64?

        init(readers: Set<Int>, excluded: Set<Int>, loop: Int?, mqtt: Set<Int>, broker: BenchBroker) {
            wall = BenchClock.nanos()
            process = BenchTasks.processCPUNanos()
            self.readers = readers.reduce(0) { $0 + BenchTasks.cpuNanos($1) }
            self.excluded = excluded.reduce(0) { $0 + BenchTasks.cpuNanos($1) }
            self.loop = loop.map { BenchTasks.cpuNanos($0) }
            self.mqtt = mqtt.reduce(0) { $0 + BenchTasks.cpuNanos($1) }
            self.broker = broker.cpuNanos()
        }
    }
}
