import BLEPayload
import Synchronization

/// Feeds a live scanner into the hub: decodes GeoRacing frames on the backend's thread and
/// hands them to the hub's event loop in batches, one batch per read burst.
///
/// A burst's signals are appended to a pending batch under a lock, and the loop is asked to drain
/// it only when no drain is already waiting: a loop that runs behind takes several bursts in one
/// hop. The pending batch and the loop's draining batch swap places and keep their room, so a
/// hand-over allocates nothing.
///
/// At most `maxBatchesInFlight` bursts wait on the loop. Past that the loop is not keeping up,
/// and a burst's signals are dropped and counted rather than queued without limit; beacons
/// repeat, so the next burst carries the same news.
// @unchecked Sendable: called by one scanner thread at a time; batches reach the hub through its Mutex.
package final class HubAdvertisementSink: AdvertisementSink, @unchecked Sendable {
    static let batchLimit = ScannedSignalBatcher.limit
    static let maxBatchesInFlight = 64

    private let hub: TrackStateHub
    /// The adapter this sink serves, for a scanner with adapters; nil: the scanner as a whole.
    let adapter: ScannerAdapterTag?
    // Touched only by the backend's thread (the protocol's one-call-at-a-time rule).
    private var batcher: ScannedSignalBatcher
    private var reportsSinceFlush = 0
    private let handoff = Mutex(Handoff())
    /// The batch the loop is ingesting, swapped with `Handoff.pending`: touched only on the loop.
    private var draining = ScannedSignalBatch()
    private let droppedSignals = Atomic<Int>(0)
    private let reports = Atomic<Int>(0)

    private struct Handoff {
        var pending = ScannedSignalBatch()
        /// Bursts in `pending`.
        var bursts = 0
        var drainScheduled = false
        /// Counts scanner state changes: a drain scheduled before one leaves the bursts after it
        /// to the drain scheduled after it, so the loop sees them in the order they happened.
        var generation = 0
    }

    /// `devices`: where the reports that are not GeoRacing go (`status.devices`); nil ignores them.
    /// `adapter`: the adapter whose backend feeds this sink (one sink per adapter).
    package init(
        hub: TrackStateHub, decoder: GeoRacingDecoder, devices: NearbyDeviceTable? = nil,
        adapter: ScannerAdapterTag? = nil
    ) {
        self.hub = hub
        self.adapter = adapter
        batcher = ScannedSignalBatcher(decoder: decoder, devices: devices, defersDevices: true, adapter: adapter)
    }

    /// Reports received and signals dropped because the loop fell behind.
    package var counters: (reports: Int, droppedSignals: Int) {
        (reports.load(ordering: .relaxed), droppedSignals.load(ordering: .relaxed))
    }

    package func receive(_ report: AdvertisingReport, bootMicros: Int64) {
        reportsSinceFlush += 1
        batcher.add(report, at: bootMicros)
        if batcher.isFull { flush() }
    }

    package func flush() {
        if reportsSinceFlush > 0 {
            reports.add(reportsSinceFlush, ordering: .relaxed)
            reportsSinceFlush = 0
        }
        batcher.recordDevices()
        guard !batcher.isEmpty else { return }
        let handover = handoff.withLock { state -> Handover in
            guard state.bursts < Self.maxBatchesInFlight else { return .dropped }
            batcher.move(into: &state.pending)
            state.bursts += 1
            guard !state.drainScheduled else { return .queued }
            state.drainScheduled = true
            return .drainNeeded(generation: state.generation)
        }
        switch handover {
        case .dropped:
            droppedSignals.add(batcher.count, ordering: .relaxed)
            batcher.removeAll()
        case .queued:
            break
        case .drainNeeded(let generation):
            hub.eventLoop.execute { [self] in drain(generation) }
        }
    }

    private enum Handover {
        case dropped
        /// Behind a drain already scheduled.
        case queued
        case drainNeeded(generation: Int)
    }

    /// Ingests the pending bursts, if they still belong to `generation`; on the loop.
    private func drain(_ generation: Int) {
        let current = handoff.withLock { state in
            guard state.generation == generation else { return false }
            swap(&state.pending, &draining)
            state.bursts = 0
            state.drainScheduled = false
            return true
        }
        guard current else { return }
        hub.ingest(draining)
        draining.removeAll()
        // A stalled loop's backlog (up to 64 full batches) is not kept for good.
        if draining.signals.capacity > 4 * Self.batchLimit {
            draining = ScannedSignalBatch()
            draining.signals.reserveCapacity(Self.batchLimit)
        }
    }

    package func scannerStateChanged(_ state: ScannerStatus.State, detail: String?) {
        // The bursts flushed before the change go with it, ahead of it; later ones wait for a new drain.
        let earlier = handoff.withLock { handoff in
            var earlier = ScannedSignalBatch()
            swap(&earlier, &handoff.pending)
            handoff.bursts = 0
            handoff.drainScheduled = false
            handoff.generation &+= 1
            return earlier
        }
        let name = adapter?.name
        hub.eventLoop.execute { [hub] in
            if !earlier.isEmpty { hub.ingest(earlier) }
            hub.setScanner(state, detail: detail, adapter: name)
        }
    }
}
