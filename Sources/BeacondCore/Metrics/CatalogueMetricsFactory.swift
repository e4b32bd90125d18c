import CoreMetrics
import Prometheus

/// swift-metrics' factory over one Prometheus registry, with each family's help line and the
/// publish latency's buckets from `MetricCatalogue`.
///
/// swift-prometheus' own `PrometheusMetricsFactory` registers every metric without a help line,
/// and its registry stops the process if one name is registered with two help texts: so this
/// factory always passes the catalogue's. It is handed to each handle explicitly (never
/// bootstrapped as the process-wide `MetricsSystem`), so every daemon, and every test, has its own
/// registry.
struct CatalogueMetricsFactory: MetricsFactory {
    let registry: PrometheusCollectorRegistry
    private let help: [String: String]

    init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
        help = Dictionary(MetricCatalogue.all.map { ($0.name, $0.help) }, uniquingKeysWith: { first, _ in first })
    }

    /// The metric named `label` as it is, with its catalogue help. swift-prometheus traps on an empty
    /// name; every label comes from `MetricCatalogue`, but a misnamed one must not stop the daemon.
    private func descriptor(_ label: String) -> MetricNameDescriptor {
        MetricNameDescriptor(
            metricName: label.isEmpty ? "beacond_unnamed" : label, unitName: "", helpText: help[label] ?? "")
    }

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        registry.makeCounter(descriptor: descriptor(label), labels: dimensions)
    }

    func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        registry.makeCounter(descriptor: descriptor(label), labels: dimensions)
    }

    func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        registry.makeGauge(descriptor: descriptor(label), labels: dimensions)
    }

    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        guard aggregate else { return registry.makeGauge(descriptor: descriptor(label), labels: dimensions) }
        return registry.makeValueHistogram(
            descriptor: descriptor(label), labels: dimensions, buckets: MetricCatalogue.latencyBuckets.map(Self.seconds)
        )
    }

    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        registry.makeDurationHistogram(
            descriptor: descriptor(label), labels: dimensions, buckets: MetricCatalogue.latencyBuckets)
    }

    func destroyCounter(_ handler: any CounterHandler) {
        if let counter = handler as? Prometheus.Counter { registry.unregisterCounter(counter) }
    }

    func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {
        if let counter = handler as? Prometheus.Counter { registry.unregisterCounter(counter) }
    }

    func destroyMeter(_ handler: any MeterHandler) {
        if let gauge = handler as? Prometheus.Gauge { registry.unregisterGauge(gauge) }
    }

    func destroyRecorder(_ handler: any RecorderHandler) {
        if let gauge = handler as? Prometheus.Gauge { registry.unregisterGauge(gauge) }
        if let histogram = handler as? ValueHistogram { registry.unregisterValueHistogram(histogram) }
    }

    func destroyTimer(_ handler: any TimerHandler) {
        if let histogram = handler as? DurationHistogram { registry.unregisterDurationHistogram(histogram) }
    }

    private static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
