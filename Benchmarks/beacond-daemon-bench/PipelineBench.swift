import BLEPayload
import BeacondCore
import CircuitState
import Glibc
import Logging
import NIOCore
import NIOPosix

/// The daemon's live pipeline in this process, as `Daemon` wires it: a hub on a one-thread
/// event loop with the live CLOCK_BOOTTIME clock and its default fusion configuration, and the
/// real `TrackStateServer` on a temporary Unix socket.
final class BenchPipeline: @unchecked Sendable {
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let hub: TrackStateHub
    let server: TrackStateServer
    let path: String

    /// The beacon whose reports change the published state.
    static let changingAddress = BluetoothAddress(rawValue: 0xBE_AC_0D_00_00_99)
    static let changingZone: UInt16 = 99
    /// Background beacons: heard over and over, each a `normal` override, never a state change.
    static let backgroundBeacons = 50
    /// `--baseline`: the paths before issue 15 (no direct writes; one read per HCI packet).
    nonisolated(unsafe) static var baseline = false

    /// `scraper`: the daemon's metrics on (`--metrics`), observing the hub and scraping it.
    /// `beforeStart`: more of the hub's outputs (the MQTT run's publisher), connected after the socket's.
    /// `copyFilter`: the hub's filter for several adapters (the two-adapter HCI path).
    init(
        scraper: MetricsScraper? = nil, copyFilter: AdapterCopyFilter? = nil,
        beforeStart: (TrackStateHub) throws -> [any HubOutput] = { _ in [] }
    ) throws {
        path = "/tmp/beacond-dbench-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
        var logger = Logger(label: "beacond.bench", factory: { _ in SwiftLogNoOpLogHandler() })
        logger.logLevel = .critical
        // No de-escalation hold: the changing beacon alternates evacuation and red flag every 10 ms, and
        // this measures the publication path, not the hold (which would turn most changes into repeats).
        let hub = TrackStateHub(
            eventLoop: group.next(), configuration: FusionConfiguration(deescalationHold: 0), clock: BootClock(),
            backend: "bench", copyFilter: copyFilter, logger: logger)
        self.hub = hub
        let publisher = TrackStatePublisher(eventLoop: hub.eventLoop)
        let status = StatusBoard(hub: hub)
        let latency = scraper.map { [$0.metrics.publishLatencyOutput(clock: hub.clock)] } ?? []
        hub.connect([publisher] + latency + (try beforeStart(hub)))
        var limits = ClientLimits()
        limits.directWrites = !Self.baseline
        server = TrackStateServer(publisher: publisher, status: status, path: path, limits: limits, logger: logger)
        try hub.eventLoop.submit { hub.start() }.wait()
        try server.start().wait()
        scraper?.start(status: status)
    }

    func close() {
        try? server.shutdown().wait()
        try? hub.eventLoop.submit { [hub] in hub.stop() }.wait()
        try? group.syncShutdownGracefully()
        unlink(path)
    }

    func onLoop<T: Sendable>(_ body: @escaping @Sendable () throws -> T) throws -> T {
        try hub.eventLoop.submit(body).wait()
    }

    /// The latency runs' producer, on a thread of its own: `total` reports paced at `rate`/s, every
    /// `changeEvery`-th a state change (at most the timeline's capacity), the rest background
    /// beacons; each report's lag behind its due time goes into `timeline.lags`. Returns when done.
    func produce(timeline: BenchTimeline, rate: Int, total: Int, changeEvery: Int) {
        let changes = timeline.capacity
        let producer = BenchThread.start { [self, timeline] in
            let interval = 1_000_000_000.0 / Double(rate)
            let start = BenchClock.nanos() + 5_000_000
            timeline.startedAt = start
            timeline.lags.reserveCapacity(total)
            var change = 0
            for index in 0..<total {
                let due = start + Int64(Double(index) * interval)
                var now = BenchClock.nanos()
                if now < due {
                    BenchClock.sleep(until: due)
                    now = BenchClock.nanos()
                }
                timeline.lags.append(now - due)
                if (index + 1) % changeEvery == 0, change < changes {
                    change += 1
                    submitChange(change, timeline: timeline)
                } else {
                    let (signal, address) = Self.backgroundSignal(index % Self.backgroundBeacons)
                    submit(signal, address: address, rssi: Int8(-60 - index % 11))
                }
            }
            timeline.changes = change
            timeline.reports = total
            timeline.endedAt = BenchClock.nanos()
        }
        producer.join()
    }

    static func backgroundSignal(_ index: Int) -> (GeoRacingSignal, BluetoothAddress) {
        (
            .circuit(zone: UInt16(1 + index % 20), mode: .normal, sequence: UInt16(1000 + index), ttl: 30),
            BluetoothAddress(rawValue: 0xBE_AC_0D_00_10_00 + UInt64(index))
        )
    }

    /// Change `k` (1-based): the changing beacon alternates evacuation and red flag, each with a newer sequence.
    static func changeSignal(_ change: Int) -> GeoRacingSignal {
        .circuit(
            zone: changingZone, mode: change % 2 == 1 ? .evacuation : .redFlag,
            sequence: UInt16(truncatingIfNeeded: 10 + change), ttl: 30)
    }

    static func expectedMode(_ change: Int) -> String {
        change % 2 == 1 ? "evacuation" : "red_flag"
    }

    /// Where a scanner backend hands a report over: a hop onto the hub's loop, then `ingest`.
    @inline(__always)
    func submit(_ signal: GeoRacingSignal, address: BluetoothAddress, rssi: Int8) {
        let hub = hub
        hub.eventLoop.execute { hub.ingest(signal, address: address, rssi: rssi, txPower: nil) }
    }

    /// A state-changing report, submitted like any other; the closure also stamps when the loop
    /// picked it up and when `ingest` (which writes the change to every subscriber) returned.
    func submitChange(_ change: Int, timeline: BenchTimeline) {
        let hub = hub
        let signal = Self.changeSignal(change)
        let slot = change - 1
        timeline.submitted[slot] = BenchClock.nanos()
        hub.eventLoop.execute {
            let cpu = BenchClock.threadCPUNanos()
            timeline.pickedUp[slot] = BenchClock.nanos()
            hub.ingest(signal, address: Self.changingAddress, rssi: -55, txPower: nil)
            timeline.fannedOut[slot] = BenchClock.nanos()
            timeline.ingestCPU[slot] = BenchClock.threadCPUNanos() - cpu
        }
    }

    /// Every background beacon heard once; returns the seq published afterwards.
    func warmUp() throws -> Int {
        try onLoop { [hub] in
            for index in 0..<Self.backgroundBeacons {
                let (signal, address) = Self.backgroundSignal(index)
                hub.ingest(signal, address: address, rssi: -65, txPower: nil)
            }
            return hub.seq
        }
    }

    /// `count` greeted clients (hello and the current state read), over the real blocking client.
    func connectSubscribers(_ count: Int, expectingSeq seq: Int) throws -> [TrackStateClient] {
        var clients: [TrackStateClient] = []
        clients.reserveCapacity(count)
        for _ in 0..<count {
            let client = try TrackStateClient(path: path)
            let (_, state) = try client.handshake()
            guard state["seq"] as? Int == seq else {
                throw BenchFailure("a new subscriber got seq \(state["seq"] ?? "none"), expected \(seq)")
            }
            clients.append(client)
        }
        let connected = try onLoop { [server] in server.clientCount }
        guard connected == count else { throw BenchFailure("\(connected) clients connected, expected \(count)") }
        return clients
    }

    /// The event loop thread's id.
    func loopThreadID() throws -> Int? {
        try onLoop { BenchProc.currentThreadID() }
    }

    struct ServerFigures: Sendable {
        var signals: Int
        var published: Int
        var coalescedStates: Int
        var droppedLines: Int
        var disconnectedSlow: Int
        var clients: Int
    }

    func figures() throws -> ServerFigures {
        try onLoop { [hub, server] in
            ServerFigures(
                signals: hub.counters.signals, published: hub.counters.published,
                coalescedStates: server.counters.coalescedStates, droppedLines: server.counters.droppedLines,
                disconnectedSlow: server.counters.disconnectedSlow, clients: server.clientCount)
        }
    }
}

/// Submission times of the state-changing reports, written by the producer thread.
final class BenchTimeline: @unchecked Sendable {
    let submitted: UnsafeMutablePointer<Int64>
    /// Written on the event loop: when the change's task started, and when its `ingest` returned.
    let pickedUp: UnsafeMutablePointer<Int64>
    let fannedOut: UnsafeMutablePointer<Int64>
    /// The loop thread's CPU time spent in that `ingest`.
    let ingestCPU: UnsafeMutablePointer<Int64>
    let capacity: Int
    var changes = 0
    var reports = 0
    var lagMax: Int64 = 0
    var lags: [Int64] = []
    var startedAt: Int64 = 0
    var endedAt: Int64 = 0

    init(capacity: Int) {
        self.capacity = max(1, capacity)
        submitted = .allocate(capacity: self.capacity)
        submitted.initialize(repeating: 0, count: self.capacity)
        pickedUp = .allocate(capacity: self.capacity)
        pickedUp.initialize(repeating: 0, count: self.capacity)
        fannedOut = .allocate(capacity: self.capacity)
        fannedOut.initialize(repeating: 0, count: self.capacity)
        ingestCPU = .allocate(capacity: self.capacity)
        ingestCPU.initialize(repeating: 0, count: self.capacity)
    }

    deinit {
        submitted.deallocate()
        pickedUp.deallocate()
        fannedOut.deallocate()
        ingestCPU.deallocate()
    }

    /// Submit → loop pickup, and pickup → `ingest` returned (engine, encoding, and the writes to
    /// every subscriber), over the first `count` changes.
    func breakdown(_ count: Int) -> (pickup: BenchStats?, ingest: BenchStats?, ingestCPU: BenchStats?) {
        let range = 0..<min(count, capacity)
        let done = range.filter { fannedOut[$0] != 0 }
        return (
            BenchStats(done.map { pickedUp[$0] - submitted[$0] }),
            BenchStats(done.map { fannedOut[$0] - pickedUp[$0] }), BenchStats(done.map { ingestCPU[$0] })
        )
    }
}

// MARK: Latency under load

/// How the changes reached the subscribers, in both the latency and the fan-out run.
struct DeliveryFigures {
    /// Submit → read, over every (change, subscriber) pair seen.
    var stats: BenchStats?
    var firstSubscriber: BenchStats?
    var lastSubscriber: BenchStats?
    var pickup: BenchStats?
    var ingest: BenchStats?
    var ingestCPU: BenchStats?

    init(reader: BenchSubscriberReader, timeline: BenchTimeline) {
        let (pairs, first, last) = reader.latencies(submitted: timeline.submitted)
        (pickup, ingest, ingestCPU) = timeline.breakdown(reader.changes)
        stats = BenchStats(pairs)
        firstSubscriber = BenchStats(first)
        lastSubscriber = BenchStats(last)
    }

    /// The report's lines, indented under the run's first line.
    var lines: [String] {
        [
            "submit → read: \(stats?.line ?? "none observed")",
            "first subscriber per change: \(firstSubscriber?.line ?? "-")",
            "last subscriber per change: \(lastSubscriber?.line ?? "-")",
            "submit → loop pickup: \(pickup?.line ?? "-")",
            "ingest + writes to all: \(ingest?.line ?? "-")",
            "... of which loop CPU: \(ingestCPU?.line ?? "-")",
        ].map { "          " + $0 }
    }
}

struct LatencyResult {
    var subscribers: Int
    var readerThreads: Int
    var rate: Int
    var duration: Double
    var reports: Int
    var ingested: Int
    var achievedRate: Double
    var producerLag: BenchStats?
    var changes: Int
    var observed: Int
    var published: Int
    var delivery: DeliveryFigures
    var loopCPU: Double?
    var coalesced: Int
    var wrongMode: Int
    var unexpected: Int
    var disconnected: Int
    /// With `--metrics`: each scrape's duration, and the daemon's own latency histogram.
    var scrapes: BenchStats?
    var scrapesOnLoop: BenchStats?
    var scrapeBytes = 0
    var histogram: [String] = []
    /// State lines the subscribers read (`BenchSubscriberReader.samples`), for the kernel-alone reference.
    var samples: [[UInt8]?] = [nil, nil]

    var met: Bool { (delivery.stats?.p99 ?? .max) < 1_000_000 && observed == changes * subscribers }
}

enum LatencyBench {
    /// `rate` reports/s for `duration` s into the pipeline with `subscribers` connected; every
    /// `changeEvery`-th report changes the published state.
    static func run(
        subscribers: Int, rate: Int, duration: Double, readerThreads: Int,
        changeInterval: Double = 0.010, metrics: Bool = false
    ) throws -> LatencyResult {
        let scraper = metrics ? MetricsScraper() : nil
        let pipeline = try BenchPipeline(scraper: scraper)
        defer { pipeline.close() }
        let baseSeq = try pipeline.warmUp()
        let clients = try pipeline.connectSubscribers(subscribers, expectingSeq: baseSeq)
        defer { for client in clients { client.close() } }

        let total = max(1, Int(Double(rate) * duration))
        let changeEvery = max(1, Int((Double(rate) * changeInterval).rounded()))
        let changes = total / changeEvery
        let timeline = BenchTimeline(capacity: changes)
        let reader = BenchSubscriberReader(
            descriptors: clients.map(\.descriptor), changes: changes, baseSeq: baseSeq,
            threads: readerThreads, expectedMode: BenchPipeline.expectedMode)
        reader.start()

        let loopTID = try pipeline.loopThreadID()
        let loopStat = loopTID.map { "/proc/self/task/\($0)/stat" }
        let loopTicksBefore = loopStat.flatMap { BenchProc.cpuTicks(statPath: $0) }
        let before = BenchClock.nanos()

        pipeline.produce(timeline: timeline, rate: rate, total: total, changeEvery: changeEvery)
        // Everything submitted has been ingested once this round trip returns.
        _ = try pipeline.onLoop { 0 }
        let ingestedAt = BenchClock.nanos()
        reader.waitForAll(deadline: BenchClock.nanos() + 2_000_000_000)
        let after = BenchClock.nanos()
        let loopTicksAfter = loopStat.flatMap { BenchProc.cpuTicks(statPath: $0) }
        reader.stop()
        scraper?.stop()
        let figures = try pipeline.figures()

        var loopCPU: Double?
        if let a = loopTicksBefore, let b = loopTicksAfter {
            loopCPU = Double(b - a) / BenchProc.ticksPerSecond / (Double(after - before) / 1e9) * 100
        }
        return LatencyResult(
            subscribers: subscribers, readerThreads: reader.threadCount, rate: rate, duration: duration,
            reports: timeline.reports,
            ingested: figures.signals - BenchPipeline.backgroundBeacons,
            achievedRate: Double(timeline.reports) / (Double(ingestedAt - timeline.startedAt) / 1e9),
            producerLag: BenchStats(timeline.lags), changes: timeline.changes,
            observed: reader.observed.load(ordering: .relaxed), published: figures.published,
            delivery: DeliveryFigures(reader: reader, timeline: timeline), loopCPU: loopCPU,
            coalesced: figures.coalescedStates, wrongMode: reader.wrongMode, unexpected: reader.unexpectedSeq,
            disconnected: reader.closedEarly + figures.disconnectedSlow,
            scrapes: scraper.flatMap { BenchStats($0.durations) },
            scrapesOnLoop: scraper.flatMap { BenchStats($0.loopDurations) }, scrapeBytes: scraper?.bytes ?? 0,
            histogram: scraper?.histogramLines ?? [], samples: reader.samples)
    }
}

// MARK: Fan-out

enum FanOutBench {
    static func run(subscribers: Int, changes: Int, readerThreads: Int, spacing: Double = 0.100) throws -> FanOutResult
    {
        let limit = TrackStateServer.raiseOpenFileLimit()
        // Both ends of every connection live in this process.
        guard limit >= 2 * subscribers + 64 else {
            throw BenchFailure("RLIMIT_NOFILE is \(limit): too low for \(subscribers) subscribers in one process")
        }
        let pipeline = try BenchPipeline()
        defer { pipeline.close() }
        let baseSeq = try pipeline.warmUp()
        let connectStart = BenchClock.nanos()
        let clients = try pipeline.connectSubscribers(subscribers, expectingSeq: baseSeq)
        defer { for client in clients { client.close() } }
        let connectSeconds = Double(BenchClock.nanos() - connectStart) / 1e9

        let timeline = BenchTimeline(capacity: changes)
        let reader = BenchSubscriberReader(
            descriptors: clients.map(\.descriptor), changes: changes, baseSeq: baseSeq,
            threads: readerThreads, expectedMode: BenchPipeline.expectedMode)
        reader.start()
        let start = BenchClock.nanos() + 20_000_000
        for change in 1...max(1, changes) {
            BenchClock.sleep(until: start + Int64(Double(change - 1) * spacing * 1e9))
            pipeline.submitChange(change, timeline: timeline)
        }
        _ = try pipeline.onLoop { 0 }
        reader.waitForAll(deadline: BenchClock.nanos() + 3_000_000_000)
        reader.stop()
        let figures = try pipeline.figures()
        return FanOutResult(
            subscribers: subscribers, readerThreads: reader.threadCount, changes: changes,
            observed: reader.observed.load(ordering: .relaxed),
            connectSeconds: connectSeconds, delivery: DeliveryFigures(reader: reader, timeline: timeline),
            coalesced: figures.coalescedStates, wrongMode: reader.wrongMode,
            disconnected: reader.closedEarly + figures.disconnectedSlow)
    }
}
