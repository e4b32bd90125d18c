import BLEPayload
import Logging
import NIOCore
import ServiceLifecycle

/// `--backend replay`: feeds a capture through the live pipeline on a virtual clock, for
/// demos and tests. Records are read off the event loop and handed over in bounded batches,
/// so a large capture at maximum speed neither blocks clients nor queues without limit.
final class ReplayBackend: Service {
    static let batchLimit = 256

    let path: String
    let clock: ReplayClock
    let loopForever: Bool
    let decoder: GeoRacingDecoder
    private let hub: TrackStateHub
    private let logger: Logger

    init(path: String, clock: ReplayClock, loop: Bool, decoder: GeoRacingDecoder, hub: TrackStateHub, logger: Logger) {
        self.path = path
        self.clock = clock
        loopForever = loop
        self.decoder = decoder
        self.hub = hub
        self.logger = logger
    }

    /// The first record's time, for the clock's start. Throws what the capture's header says.
    static func firstTimestamp(of path: String) throws(CaptureError) -> Int64? {
        let reader = try CaptureReader(path: path)
        return try reader.next()?.timestamp
    }

    func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                try await self.replay()
            }
        } catch is CancellationError {
            // Shutdown while replaying or holding the final state: a clean stop.
        }
    }

    private func replay() async throws {
        await hop { $0.setScanner(.up) }
        if case .maximum = clock.speed { await hop { $0.beginTimeline() } }
        var offset: Int64 = 0
        var pass = 0
        repeat {
            if pass > 0 { await hop { $0.clearOverrides() } }
            let span = try await replayPass(offset: offset)
            pass += 1
            guard let span else { break }
            // The next pass continues on the same clock, shifted past this one by a second.
            offset += span.last - span.first + 1_000_000
            logger.limited(.info, "replay.pass", "replay pass \(pass) of \(path) finished")
        } while loopForever && !Task.isCancelled
        if case .maximum = clock.speed { await hop { $0.finishTimeline() } }
        await hop { $0.setScanner(.none) }
        logger.info("replay of \(path) finished; holding the final state")
        try await gracefulShutdown()
    }

    /// Replays the capture once, shifted by `offset`; returns its first and last record times.
    private func replayPass(offset: Int64) async throws -> (first: Int64, last: Int64)? {
        let reader = try CaptureReader(path: path)
        var extractor = AdvertisingExtractor()
        var batch: [ScannedSignal] = []
        batch.reserveCapacity(Self.batchLimit)
        var span: (first: Int64, last: Int64)?
        var rejected = 0
        while let packet = try reader.next() {
            try Task.checkCancellation()
            let time = packet.timestamp + offset
            span = (span?.first ?? packet.timestamp, packet.timestamp)
            if !batch.isEmpty, batch.count >= Self.batchLimit || clock.realMicros(until: time) > 0 {
                try await deliver(batch, rejected: rejected)
                batch.removeAll(keepingCapacity: true)
                rejected = 0
            }
            let wait = clock.realMicros(until: time)
            if wait > 0 { try await Task.sleep(for: .microseconds(wait)) }
            extractor.process(packet) { report in
                switch decoder.decode(report.data) {
                case .signal(let signal):
                    batch.append(ScannedSignal(signal: signal, address: report.address, rssi: report.rssi,
                                        txPower: report.txPower ?? report.data.txPowerLevel, time: time))
                case .rejected:
                    rejected += 1
                case .none:
                    break
                }
            }
        }
        if !batch.isEmpty || rejected > 0 { try await deliver(batch, rejected: rejected) }
        return span
    }

    /// Hands a batch to the hub and waits for it, which bounds what is in flight.
    private func deliver(_ batch: [ScannedSignal], rejected: Int) async throws {
        let clock = clock
        try await hub.eventLoop.submit { [hub] in
            for _ in 0..<rejected { hub.rejectedFrame() }
            for item in batch {
                clock.jump(to: item.time)
                hub.ingest(item.signal, address: item.address, rssi: item.rssi, txPower: item.txPower,
                                 at: item.time)
            }
        }.get()
    }

    private func hop(_ body: @escaping @Sendable (TrackStateHub) -> Void) async {
        try? await hub.eventLoop.submit { [hub] in body(hub) }.get()
    }
}
