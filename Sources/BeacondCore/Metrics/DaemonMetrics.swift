import CoreMetrics
import NIOCore
import Prometheus
import Synchronization

/// The daemon's Prometheus metrics: swift-metrics handles over a registry of its own, filled at
/// each scrape from the counters the daemon already keeps for `beacond status`.
///
/// Why at the scrape, and not as things happen: the hub, the publisher, the socket server, the
/// scanner and the remote poller already count everything for the status reply, on their own
/// threads, without locks. Feeding swift-metrics handles as well would put a lock (each handle's)
/// on the publishing path for every signal. Instead a scrape hops onto the hub's event loop once,
/// takes the same status message a `{"cmd":"status"}` request gets (without its lists), and
/// leaves the loop; the copy into the handles and the rendering happen on the metrics server's
/// own thread. The loop's cost is one status message per scrape.
///
/// The publish latency histogram is the one thing recorded as it happens: by a hub output
/// connected after the socket server's, so after the state line was written to every client (off
/// the critical section). Its lock is only ever contended by a scrape
/// rendering that histogram.
package final class DaemonMetrics: Sendable {
    let registry = PrometheusCollectorRegistry()
    private let factory: CatalogueMetricsFactory
    private let handles: Mutex<Handles>
    private let latency: LatencyTimer
    /// How long the last scrape held the hub's loop, microseconds (the benchmark reports it).
    package let lastLoopMicros = Atomic<Int64>(0)

    /// The handles made so far, by series, and each counter's total as last copied.
    private struct Handles: ~Copyable {
        var counters: [MetricSample.Series: (handle: CoreMetrics.Counter, total: Int64)] = [:]
        var gauges: [MetricSample.Series: CoreMetrics.Gauge] = [:]
    }

    /// swift-metrics' `Timer` is thread-safe (its handler is swift-prometheus' locked histogram).
    // @unchecked Sendable: swift-metrics' Timer is thread-safe, but not declared Sendable.
    private final class LatencyTimer: @unchecked Sendable {
        let timer: CoreMetrics.Timer
        init(_ timer: CoreMetrics.Timer) { self.timer = timer }
    }

    package init() {
        factory = CatalogueMetricsFactory(registry: registry)
        latency = LatencyTimer(CoreMetrics.Timer(label: MetricCatalogue.publishLatency.name, factory: factory))
        handles = Mutex(Handles())
    }

    // MARK: Scrapes

    /// Copies `samples` into the handles: gauges take the value, counters the increase since the
    /// last copy (a total that went down, which the daemon's counters never do, restarts the counter).
    package func update(_ samples: [MetricSample]) {
        let factory = factory
        handles.withLock { handles in
            for sample in samples {
                let series = sample.series
                let dimensions = series.labels.map { ($0.name, $0.value) }
                switch series.family.kind {
                case .gauge:
                    let gauge =
                        handles.gauges[series]
                        ?? CoreMetrics.Gauge(label: series.family.name, dimensions: dimensions, factory: factory)
                    handles.gauges[series] = gauge
                    gauge.record(sample.value)
                case .counter:
                    let total = Self.total(sample.value)
                    var entry =
                        handles.counters[series]
                        ?? (CoreMetrics.Counter(label: series.family.name, dimensions: dimensions, factory: factory), 0)
                    if total < entry.total {
                        entry.handle.reset()
                        entry.total = 0
                    }
                    if total > entry.total { entry.handle.increment(by: total - entry.total) }
                    entry.total = total
                    handles.counters[series] = entry
                case .histogram:
                    break
                }
            }
        }
    }

    /// The Prometheus text exposition of every series.
    package func render() -> [UInt8] {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(8192)
        registry.emit(into: &buffer)
        return buffer
    }

    /// A scrape: the status message from the hub's loop (one hop), then the copy and the rendering
    /// on `loop`, the metrics server's.
    package func scrape(status board: StatusBoard, on loop: any EventLoop) -> EventLoopFuture<[UInt8]> {
        board.eventLoop.submit {
            let started = MonotonicClock.micros()
            let status = board.message(listLimit: 0)
            self.lastLoopMicros.store(MonotonicClock.micros() - started, ordering: .relaxed)
            return status
        }
        .hop(to: loop)
        .map { status in
            self.update(MetricSample.samples(from: status))
            return self.render()
        }
    }

    private static func total(_ value: Double) -> Int64 {
        guard value.isFinite, value > 0 else { return 0 }
        return value >= 9.2e18 ? .max : Int64(value)
    }

    // MARK: Publish latency

    /// Records one publication's latency, `microseconds` of real time; call after the fan-out.
    package func recordPublishLatency(microseconds: Int64) {
        let (nanos, overflow) = max(0, microseconds).multipliedReportingOverflow(by: 1000)
        latency.timer.recordNanoseconds(overflow ? .max : nanos)
    }

    /// The hub output that records each publication's latency. Connect it after the socket
    /// server's publisher, so it runs after the fan-out. The latency runs from the publication's
    /// engine time (the input's arrival: a report's receipt on CLOCK_BOOTTIME, a fetch's, an
    /// expiry's deadline) to now, in real time, on `clock` (the hub's). A replay at maximum speed
    /// has no real time to measure, and records nothing.
    package func publishLatencyOutput(clock: any EngineClock) -> any HubOutput {
        PublishLatencyOutput(metrics: self, clock: clock)
    }

    /// Real microseconds from engine time `time` to now: the live clock's difference, a replay's
    /// divided by its speed; nil at maximum speed.
    static func realMicros(from time: Int64, clock: any EngineClock) -> Int64? {
        let (elapsed, overflow) = clock.now().subtractingReportingOverflow(time)
        guard !overflow else { return nil }
        guard let replay = clock as? ReplayClock else { return max(0, elapsed) }
        guard case .factor(let factor) = replay.speed, factor > 0 else { return nil }
        return max(0, ReplayClock.clamped(Double(elapsed) / factor))
    }
}

private final class PublishLatencyOutput: HubOutput {
    let metrics: DaemonMetrics
    let clock: any EngineClock

    init(metrics: DaemonMetrics, clock: any EngineClock) {
        self.metrics = metrics
        self.clock = clock
    }

    func receive(_ event: HubEvent) {
        guard case .published(let publication) = event,
            let elapsed = DaemonMetrics.realMicros(from: publication.state.time, clock: clock)
        else { return }
        metrics.recordPublishLatency(microseconds: elapsed)
    }
}
