import BLEPayload
import Synchronization

/// Feeds a live scanner into the hub: decodes GeoRacing frames on the backend's thread and
/// hands them to the hub's event loop in batches, one hop per read burst.
///
/// At most `maxBatchesInFlight` batches wait on the loop. Past that the loop is not keeping up,
/// and a burst's signals are dropped and counted rather than queued without limit; beacons
/// repeat, so the next burst carries the same news.
package final class HubAdvertisementSink: AdvertisementSink, @unchecked Sendable {
    static let batchLimit = 256
    static let maxBatchesInFlight = 64

    private let hub: TrackStateHub
    private let decoder: GeoRacingDecoder
    // Touched only by the backend's thread (the protocol's one-call-at-a-time rule).
    private var batch: [ScannedSignal] = []
    private var rejected = 0
    private let inFlight = Atomic<Int>(0)
    private let droppedSignals = Atomic<Int>(0)
    private let reports = Atomic<Int>(0)

    package init(hub: TrackStateHub, decoder: GeoRacingDecoder) {
        self.hub = hub
        self.decoder = decoder
        batch.reserveCapacity(Self.batchLimit)
    }

    /// Reports received and signals dropped because the loop fell behind.
    package var counters: (reports: Int, droppedSignals: Int) {
        (reports.load(ordering: .relaxed), droppedSignals.load(ordering: .relaxed))
    }

    package func receive(_ report: AdvertisingReport, bootMicros: Int64) {
        reports.add(1, ordering: .relaxed)
        switch decoder.decode(report.data) {
        case .signal(let signal):
            batch.append(ScannedSignal(signal: signal, address: report.address, rssi: report.rssi,
                                       txPower: report.txPower ?? report.data.txPowerLevel, time: bootMicros))
            if batch.count >= Self.batchLimit { flush() }
        case .rejected:
            rejected += 1
        case .none:
            break
        }
    }

    package func flush() {
        guard !batch.isEmpty || rejected > 0 else { return }
        let signals = batch
        let rejectedFrames = rejected
        batch.removeAll(keepingCapacity: true)
        rejected = 0
        guard inFlight.add(1, ordering: .acquiring).newValue <= Self.maxBatchesInFlight else {
            inFlight.subtract(1, ordering: .relaxed)
            droppedSignals.add(signals.count, ordering: .relaxed)
            return
        }
        hub.eventLoop.execute { [self] in
            inFlight.subtract(1, ordering: .releasing)
            for _ in 0..<rejectedFrames { hub.rejectedFrame() }
            for item in signals {
                hub.ingest(item.signal, address: item.address, rssi: item.rssi, txPower: item.txPower, at: item.time)
            }
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
