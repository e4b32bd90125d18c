import BLEPayload
import Logging
import NIOCore
import ServiceLifecycle

/// `--backend replay`: feeds a capture through the live pipeline on a virtual clock, for
/// demos and tests. Records are read off the event loop and handed over in bounded batches,
/// so a large capture at maximum speed neither blocks clients nor queues without limit.
final class ReplayBackend: Service {
    let path: String
    let clock: ReplayClock
    let loopForever: Bool
    let decoder: GeoRacingDecoder
    /// Where the reports that are not GeoRacing go (`status.devices`); nil ignores them.
    let devices: NearbyDeviceTable?
    private let hub: TrackStateHub
    private let logger: Logger

    init(
        path: String, clock: ReplayClock, loop: Bool, decoder: GeoRacingDecoder, devices: NearbyDeviceTable? = nil,
        hub: TrackStateHub, logger: Logger
    ) {
        self.path = path
        self.clock = clock
        loopForever = loop
        self.decoder = decoder
        self.devices = devices
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
        var lastPassLogged: Int64?
        repeat {
            if pass > 0 { await hop { $0.clearOverrides() } }
            let passStarted = MonotonicClock.micros()
            let outcome = try await replayPass(offset: offset)
            pass += 1
            guard loopForever, !outcome.complete || outcome.span != nil else { break } // not looping, or empty
            guard outcome.complete, let span = outcome.span, let next = Self.nextOffset(offset, span: span) else {
                let reason = "the shifted capture time would pass the largest representable time (Int64 µs)"
                logger.warning("replay of \(path): looping stops after pass \(pass): \(reason)")
                break
            }
            offset = next
            // Bounded logging: a line per pass at most every 10 s of real time, the rest at debug.
            let now = MonotonicClock.micros()
            if lastPassLogged.map({ now - $0 >= Self.passLogInterval }) ?? true {
                lastPassLogged = now
                logger.info("replay pass \(pass) of \(path) finished")
            } else {
                logger.debug("replay pass \(pass) of \(path) finished")
            }
            let rest = Self.minimumPassMicros - (now - passStarted)
            if rest > 0 { try await hub.eventLoop.wait(for: .microseconds(rest)) }
        } while !Task.isCancelled
        if case .maximum = clock.speed { await hop { $0.finishTimeline() } }
        await hop { $0.setScanner(.none) }
        logger.info("replay of \(path) finished; holding the final state")
        try await gracefulShutdown()
    }

    /// The shortest real time a looped pass takes, so a tiny capture at a high speed cannot spin.
    static let minimumPassMicros: Int64 = 10_000
    static let passLogInterval: Int64 = 10_000_000
    /// The capture time between the latest record of one pass and the first of the next.
    static let passGap: Int64 = 1_000_000

    /// The next pass's shift: past the latest time of this pass by `passGap`, so it is always
    /// positive, whatever order the records' times were in. Nil when it cannot be represented.
    static func nextOffset(_ offset: Int64, span: (first: Int64, latest: Int64)) -> Int64? {
        let (length, lengthOverflow) = span.latest.subtractingReportingOverflow(span.first)
        guard !lengthOverflow else { return nil }
        let (shift, shiftOverflow) = length.addingReportingOverflow(passGap)
        guard !shiftOverflow else { return nil }
        let (next, overflow) = offset.addingReportingOverflow(shift)
        return overflow ? nil : next
    }

    /// Replays the capture once, shifted by `offset`. Returns its first record's time and the
    /// latest time seen (unshifted), and whether every record's shifted time was representable.
    /// A record whose time runs backwards is taken at the latest time seen, as the engine does.
    private func replayPass(offset: Int64) async throws -> (span: (first: Int64, latest: Int64)?, complete: Bool) {
        let reader = try CaptureReader(path: path)
        var extractor = AdvertisingExtractor()
        var batcher = ScannedSignalBatcher(decoder: decoder, devices: devices)
        var span: (first: Int64, latest: Int64)?
        var complete = true
        while true {
            let next: CapturePacket?
            do {
                next = try reader.next()
            } catch {
                // The records before a capture error are delivered and published (the scanner goes
                // down with the error as its reason) before the error stops the daemon.
                try await deliver(batcher.take())
                let reason = error.description
                await hop { $0.setScanner(.down, detail: reason) }
                throw error
            }
            guard let packet = next else { break }
            try Task.checkCancellation()
            let latest = max(span?.latest ?? packet.timestamp, packet.timestamp)
            let (time, overflow) = latest.addingReportingOverflow(offset)
            guard !overflow else {
                complete = false
                break
            }
            span = (span?.first ?? packet.timestamp, latest)
            if !batcher.isEmpty, batcher.isFull || clock.realMicros(until: time) > 0 {
                try await deliver(batcher.take())
            }
            // A gap longer than the clock's longest delay is waited out in steps.
            while case let wait = clock.realMicros(until: time), wait > 0 {
                try await hub.eventLoop.wait(for: .microseconds(wait))
            }
            extractor.process(packet) { batcher.add($0, at: time) }
        }
        if !batcher.isEmpty { try await deliver(batcher.take()) }
        return (span, complete)
    }

    /// Hands a batch to the hub and waits for it, which bounds what is in flight.
    private func deliver(_ batch: ScannedSignalBatch) async throws {
        let clock = clock
        try await hub.eventLoop.submit { [hub] in
            batch.apply(to: hub) { clock.jump(to: $0) }
        }.get()
    }

    private func hop(_ body: @escaping @Sendable (TrackStateHub) -> Void) async {
        try? await hub.eventLoop.submit { [hub] in body(hub) }.get()
    }
}
