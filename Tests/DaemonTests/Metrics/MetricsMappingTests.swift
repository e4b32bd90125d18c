import BLEPayload
import BeacondTestSupport
import CircuitState
import Foundation
import Logging
import NIOCore
import NIOEmbedded
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// Issue 13, "Prometheus metrics": what each series is made from, how totals become swift-metrics
/// counter increments, and that the publish latency is recorded after the fan-out.
@Suite struct MetricsMappingTests {
    static let second: Int64 = 1_000_000

    static func status(mode: String = "red_flag") -> StatusMessage {
        let scanner = ScannerStatus(
            backend: "hci", state: .degraded,
            adapters: [
                AdapterHealth(name: "hci1", state: .up, reports: 700, restarts: 2, reconnects: 0),
                AdapterHealth(
                    name: "hci2", state: .recovering, detail: "gone", reports: 300, restarts: 0, reconnects: 1),
            ])
        let state = StateMessage(
            seq: 12, time: WallTime(micros: 0), mode: mode, source: "beacon", zone: 3, beacon: nil, remote: nil,
            scanner: scanner)
        var counters = HubStatusCounters()
        counters.published = 12
        counters.signals = 500
        counters.accepted = 40
        counters.repeats = 400
        counters.rejectedFrames = 3
        counters.olderIgnored = 4
        counters.filteredRSSI = 5
        counters.filteredZone = 6
        counters.filteredAllow = 7
        counters.filteredDistance = 8
        counters.filteredUnknownMode = 9
        counters.refused = 10
        counters.overrides = 2
        counters.evicted = 11
        counters.expired = 13
        counters.remoteFetches = 20
        counters.remoteFailures = 2
        var status = StatusMessage(
            uptime: 42.5, state: state, overrides: [], overridesOmitted: 0, beacons: [], beaconsOmitted: 0,
            remote: RemoteReport(
                mode: "normal", reportedMode: "normal", fresh: true, latched: false, restored: false, age: 1.25,
                message: nil, lastError: nil),
            scanner: scanner, counters: counters)
        var hci = HCIBackendStatus(adapter: "hci0", mode: "extended")
        hci.restarts = 2
        hci.reports = 900
        hci.kernelFilter = KernelFilterStatus(state: "on", probes: 3, lifts: 1)
        status.hci = hci
        status.scan = ScanStatus(
            reports: 1000, droppedSignals: 14,
            copies: CopyFilterStatus(passed: 750, dropped: 250, handovers: 3, evictions: 0))
        var server = ServerStatus()
        server.clients = 5
        server.rejectedClients = 15
        server.droppedLines = 16
        server.disconnectedSlow = 17
        status.server = server
        status.signed = SignedFramesStatus(
            unsigned: "accept", clockWindow: 30, accepted: 21, tagsComputed: 3, tagsReused: 18,
            rejected: ["bad_tag": 22, "replayed": 23, "clock_window": 0, "unknown_key": 0, "expired": 0],
            belowSigned: 24, unsignedRejected: 0, sendersEvicted: 0, marksClamped: 0, warningsSuppressed: 0,
            senders: [
                SignedSenderReport(
                    source: "circuit 3 zone 7", signedAt: 1, sequence: 2, clockOffset: -1.5, lastAccepted: 1),
                SignedSenderReport(
                    source: "circuit 4 zone 8", signedAt: 1, sequence: 2, clockOffset: nil, lastAccepted: nil),
            ],
            sendersOmitted: 0)
        status.counters.belowSigned = 24
        return status
    }

    static func values(_ samples: [MetricSample]) -> [String: Double] {
        var values: [String: Double] = [:]
        for sample in samples {
            let labels = sample.series.labels.map { "\($0.name)=\($0.value)" }.joined(separator: ",")
            values[sample.series.family.name + (labels.isEmpty ? "" : "{\(labels)}")] = sample.value
        }
        return values
    }

    @Test func samplesAreTheStatusReplysCounters() {
        let values = Self.values(MetricSample.samples(from: Self.status()))
        #expect(values["beacond_state_changes_total"] == 12)
        #expect(values["beacond_signals_received_total"] == 500)
        #expect(values["beacond_signals_accepted_total"] == 40)
        #expect(values["beacond_signals_repeated_total"] == 400)
        let rejected = [
            "invalid_frame": 3.0, "older_sequence": 4, "rssi": 5, "zone": 6, "allow_list": 7, "distance": 8,
            "unknown_mode": 9, "table_full": 10,
        ]
        for (reason, count) in rejected { #expect(values["beacond_signals_rejected_total{reason=\(reason)}"] == count) }
        // Signed frames: the verifier's reasons beside the engine's, and each sender's clock offset
        // (a mark restored and not heard since has none).
        #expect(values["beacond_signals_rejected_total{reason=bad_tag}"] == 22)
        #expect(values["beacond_signals_rejected_total{reason=replayed}"] == 23)
        #expect(values["beacond_signals_rejected_total{reason=below_signed}"] == 24)
        #expect(values["beacond_signed_accepted_total"] == 21)
        #expect(values["beacond_signed_clock_offset_seconds{source=circuit 3 zone 7}"] == -1.5)
        #expect(values["beacond_signed_clock_offset_seconds{source=circuit 4 zone 8}"] == nil)
        #expect(values["beacond_overrides_active"] == 2)
        #expect(values["beacond_overrides_evicted_total"] == 11)
        #expect(values["beacond_overrides_expired_total"] == 13)
        #expect(values["beacond_remote_fetches_total"] == 20)
        #expect(values["beacond_remote_failures_total"] == 2)
        #expect(values["beacond_remote_age_seconds"] == 1.25)
        #expect(values["beacond_remote_fresh"] == 1)
        #expect(values["beacond_scanner_up"] == 1)
        #expect(values["beacond_scanner_degraded"] == 1)
        #expect(values["beacond_scanner_restarts_total"] == 2)
        #expect(values["beacond_scanner_adapter_up{adapter=hci1}"] == 1)
        #expect(values["beacond_scanner_adapter_up{adapter=hci2}"] == 0)
        #expect(values["beacond_scanner_adapter_reports_total{adapter=hci1}"] == 700)
        #expect(values["beacond_scanner_adapter_reports_total{adapter=hci2}"] == 300)
        #expect(values["beacond_scanner_adapter_restarts_total{adapter=hci1}"] == 2)
        #expect(values["beacond_scan_copies_dropped_total"] == 250)
        #expect(values["beacond_scanner_kernel_filter"] == 1)
        #expect(values["beacond_scanner_kernel_filter_probes_total"] == 3)
        // The live sink's count wins over the backend's own.
        #expect(values["beacond_reports_total{backend=hci}"] == 1000)
        #expect(values["beacond_scan_signals_dropped_total"] == 14)
        #expect(values["beacond_clients_connected"] == 5)
        #expect(values["beacond_clients_refused_total"] == 15)
        #expect(values["beacond_lines_dropped_total"] == 16)
        #expect(values["beacond_clients_disconnected_total{reason=slow}"] == 17)
        #expect(values["beacond_uptime_seconds"] == 42.5)
        #expect(values["beacond_build_info{version=\(BeacondVersion.current)}"] == 1)
        // Every family but the histogram has a series.
        let families = Set(MetricSample.samples(from: Self.status()).map(\.series.family.name))
        #expect(families == Set(MetricCatalogue.all.filter { $0.kind != .histogram }.map(\.name)))
    }

    @Test func withoutARemoteOrAServerTheirSeriesSayUnknownOrZero() {
        var status = Self.status()
        status.remote = nil
        status.server = nil
        status.scan = nil
        status.hci = nil
        status.scanner = ScannerStatus(backend: "replay", state: .none)
        let values = Self.values(MetricSample.samples(from: status))
        #expect(values["beacond_remote_age_seconds"]?.isNaN == true)
        #expect(values["beacond_remote_fresh"] == 0)
        #expect(values["beacond_scanner_up"] == 0)
        #expect(values["beacond_clients_connected"] == 0)
        // Replay feeds the hub directly: its reports are the GeoRacing frames, valid or not.
        #expect(values["beacond_reports_total{backend=replay}"] == 503)
    }

    @Test(arguments: MetricCatalogue.modeLabels)
    func theModeGaugeIsOneForThePublishedModeOnly(mode: String) {
        let values = Self.values(MetricSample.samples(from: Self.status(mode: mode)))
        for label in MetricCatalogue.modeLabels {
            #expect(values["beacond_track_mode{mode=\(label)}"] == (label == mode ? 1 : 0))
        }
    }

    /// `name value` lines of the exposition, by series as written.
    static func exposition(_ metrics: DaemonMetrics) -> [String: String] {
        var lines: [String: String] = [:]
        let text = String(decoding: metrics.render(), as: UTF8.self)
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " ") else { continue }
            lines[String(line[..<space])] = String(line[line.index(after: space)...])
        }
        return lines
    }

    @Test func countersTakeTheIncreaseAndGaugesTheValue() {
        let metrics = DaemonMetrics()
        var status = Self.status()
        metrics.update(MetricSample.samples(from: status))
        #expect(Self.exposition(metrics)["beacond_state_changes_total"] == "12")
        #expect(Self.exposition(metrics)["beacond_track_mode{mode=\"red_flag\"}"] == "1.0")
        status.counters.published = 30
        status.state.mode = "evacuation"
        metrics.update(MetricSample.samples(from: status))
        metrics.update(MetricSample.samples(from: status))
        var lines = Self.exposition(metrics)
        #expect(lines["beacond_state_changes_total"] == "30")
        #expect(lines["beacond_track_mode{mode=\"red_flag\"}"] == "0.0")
        #expect(lines["beacond_track_mode{mode=\"evacuation\"}"] == "1.0")
        #expect(lines["beacond_signals_rejected_total{reason=\"rssi\"}"] == "5")
        // A total that went down (never the daemon's) restarts the counter rather than hiding it.
        status.counters.published = 4
        metrics.update(MetricSample.samples(from: status))
        lines = Self.exposition(metrics)
        #expect(lines["beacond_state_changes_total"] == "4")
        let text = String(decoding: metrics.render(), as: UTF8.self)
        #expect(text.contains("# TYPE beacond_state_changes_total counter"))
        #expect(text.contains("# HELP beacond_track_mode 1 for the published track mode"))
        #expect(text.contains("# TYPE beacond_track_mode gauge"))
    }

    /// Renders the metrics when the state line reaches it: the latency must not be there yet.
    final class LatencyAtDelivery: TrackStateSubscriber {
        let metrics: DaemonMetrics
        var countsAtDelivery: [String?] = []
        var wantsBeacons: Bool { false }
        init(metrics: DaemonMetrics) { self.metrics = metrics }
        func deliver(state line: ByteBuffer) {
            countsAtDelivery.append(MetricsMappingTests.exposition(metrics)["beacond_publish_latency_seconds_count"])
        }
        func deliver(beacon line: ByteBuffer) {}
    }

    @Test func theLatencyIsRecordedAfterTheLineWentToEveryClient() throws {
        let loop = EmbeddedEventLoop()
        let clock = ManualClock(1_000 * Self.second)
        let hub = TrackStateHub(testingOn: loop, clock: clock)
        let publisher = TrackStatePublisher(connectedTo: hub)
        let metrics = DaemonMetrics()
        hub.connect([metrics.publishLatencyOutput(clock: clock)])
        let subscriber = LatencyAtDelivery(metrics: metrics)
        publisher.subscribe(subscriber)
        hub.start(checkClockEvery: nil)
        defer { hub.stop() }
        // A report received 2 ms before the hub handled it: 2 ms of latency.
        clock.time += 10 * Self.second
        hub.ingest(
            .circuit(zone: 1, mode: .redFlag, sequence: 1), address: BluetoothAddress(rawValue: 1), rssi: -50,
            txPower: nil, at: clock.time - 2_000)
        let lines = Self.exposition(metrics)
        #expect(lines["beacond_publish_latency_seconds_count"] == "2")
        #expect(lines["beacond_publish_latency_seconds_bucket{le=\"0.001\"}"] == "1")
        #expect(lines["beacond_publish_latency_seconds_bucket{le=\"0.0025\"}"] == "2")
        // Each delivery saw the count of the publications before it: recorded after the fan-out.
        #expect(subscriber.countsAtDelivery == ["0", "1"])
    }

    @Test func aReplaysElapsedTimeIsScaledToRealTime() throws {
        let doubled = ReplayClock(start: 1_000 * Self.second, speed: .factor(2))
        let real = try #require(DaemonMetrics.realMicros(from: doubled.now() - 4 * Self.second, clock: doubled))
        #expect(real >= 2 * Self.second && real < 2 * Self.second + 500_000)
        let maximum = ReplayClock(start: 1_000 * Self.second, speed: .maximum)
        #expect(DaemonMetrics.realMicros(from: 999 * Self.second, clock: maximum) == nil)
        let live = ManualClock(5 * Self.second)
        #expect(DaemonMetrics.realMicros(from: 4 * Self.second, clock: live) == Self.second)
        #expect(DaemonMetrics.realMicros(from: 6 * Self.second, clock: live) == 0)
        #expect(DaemonMetrics.realMicros(from: .min, clock: live) == nil)
    }

    @Test func theListenAddressIsCheckedLikeTheKiosks() throws {
        #expect(DaemonConfiguration().metrics.listen == nil)
        #expect(DaemonConfiguration().describe(.metricsListen) == "~")
        let local = try DaemonOverrides([ConfigFlag(.metricsListen, "localhost:9464")])
            .applied(to: DaemonConfiguration())
        #expect(local.metrics.listen?.host == "127.0.0.1")
        #expect(local.metrics.listen?.port == 9464)
        #expect(local.describe(.metricsListen) == "127.0.0.1:9464")
        let v6 = try DaemonOverrides([ConfigFlag(.metricsListen, "[::1]:0")]).applied(to: DaemonConfiguration())
        #expect(v6.describe(.metricsListen) == "[::1]:0")
        #expect(ConfigKey.forFlag("--metrics") == .metricsListen)
        #expect(!ConfigKey.metricsListen.isLiveReloadable)
        do {
            _ = try DaemonOverrides([ConfigFlag(.metricsListen, "9464")]).applied(to: DaemonConfiguration())
            Issue.record("accepted an address without a port")
        } catch {
            #expect(error.exitCode == 64)
            #expect(
                error.description == "--metrics (metrics.listen): \"9464\" has no port: give ADDR:PORT, "
                    + "e.g. 127.0.0.1:9464 or [::1]:9464")
        }
    }

    @Test func docsListEveryFamilyWithItsType() throws {
        let text = try String(contentsOfFile: RepositoryPaths.root.path + "/docs/metrics.md", encoding: .utf8)
        for family in MetricCatalogue.all {
            let row = text.split(separator: "\n").first { $0.hasPrefix("| `\(family.name)`") }
            #expect(row != nil, "docs/metrics.md has no row for \(family.name)")
            if let row { #expect(row.contains("| \(family.kind.rawValue) |"), "\(family.name): wrong type") }
        }
    }
}
