import BLEPayload
import Synchronization

/// Feeds a live scanner into the hub: decodes GeoRacing frames on the backend's thread and
/// hands them to the hub's event loop in batches, one hop per read burst.
///
/// At most `maxBatchesInFlight` batches wait on the loop. Past that the loop is not keeping up,
/// and a burst's signals are dropped and counted rather than queued without limit; beacons
/// repeat, so the next burst carries the same news.
package final class HubAdvertisementSink: AdvertisementSink, @unchecked Sendable {
    static let batchLimit = ScannedSignalBatcher.limit
    static let maxBatchesInFlight = 64

    private let hub: TrackStateHub
    // Touched only by the backend's thread (the protocol's one-call-at-a-time rule).
    private var batcher: ScannedSignalBatcher
    private let inFlight = Atomic<Int>(0)
    private let droppedSignals = Atomic<Int>(0)
    private let reports = Atomic<Int>(0)

    /// `devices`: where the reports that are not GeoRacing go (`status.devices`); nil ignores them.
    package init(hub: TrackStateHub, decoder: GeoRacingDecoder, devices: NearbyDeviceTable? = nil) {
        self.hub = hub
        batcher = ScannedSignalBatcher(decoder: decoder, devices: devices)
    }

    /// Reports received and signals dropped because the loop fell behind.
    package var counters: (reports: Int, droppedSignals: Int) {
        (reports.load(ordering: .relaxed), droppedSignals.load(ordering: .relaxed))
    }

    package func receive(_ report: AdvertisingReport, bootMicros: Int64) {
        reports.add(1, ordering: .relaxed)
        batcher.add(report, at: bootMicros)
        if batcher.isFull { flush() }
    }

    package func flush() {
        guard !batcher.isEmpty else { return }
        let batch = batcher.take()
        guard inFlight.add(1, ordering: .acquiring).newValue <= Self.maxBatchesInFlight else {
            inFlight.subtract(1, ordering: .relaxed)
            droppedSignals.add(batch.signals.count, ordering: .relaxed)
            return
        }
        hub.eventLoop.execute { [self] in
            inFlight.subtract(1, ordering: .releasing)
            batch.apply(to: hub)
        }
    }

    package func scannerStateChanged(_ state: ScannerStatus.State, detail: String?) {
        hub.eventLoop.execute { [hub] in hub.setScanner(state, detail: detail) }
    }

    /// The sink's counters in a status reply (`status.scan`).
    var scanStatus: ScanStatus {
        let counters = counters
        return ScanStatus(reports: counters.reports, droppedSignals: counters.droppedSignals)
    }
}
