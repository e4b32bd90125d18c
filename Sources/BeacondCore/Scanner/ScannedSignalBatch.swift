import BLEPayload

/// Signals decoded from advertising reports, and how many GeoRacing frames were rejected, on
/// their way to the hub in one hop of its event loop.
struct ScannedSignalBatch: Sendable {
    var signals: [ScannedSignal] = []
    var rejectedFrames = 0

    var isEmpty: Bool { signals.isEmpty && rejectedFrames == 0 }

    /// Hands the batch to the hub; call on its event loop. `willIngest` sees each signal's time
    /// just before it goes in (replay moves its virtual clock there).
    func apply(to hub: TrackStateHub, willIngest: (Int64) -> Void = { _ in }) {
        for _ in 0..<rejectedFrames { hub.rejectedFrame() }
        for item in signals {
            willIngest(item.time)
            hub.ingest(item.signal, address: item.address, rssi: item.rssi, txPower: item.txPower, at: item.time)
        }
    }
}

/// The one path from advertising reports to GeoRacing signals for the hub, shared by the live
/// scanners (through `HubAdvertisementSink`) and replay: decodes each report and collects the
/// signals in a batch of at most `limit`, which the caller takes and delivers.
struct ScannedSignalBatcher {
    static let limit = 256

    let decoder: GeoRacingDecoder
    /// Where the reports that are not GeoRacing go (`status.devices`); nil ignores them.
    let devices: NearbyDeviceTable?
    private var batch = ScannedSignalBatch()

    init(decoder: GeoRacingDecoder, devices: NearbyDeviceTable? = nil) {
        self.decoder = decoder
        self.devices = devices
        batch.signals.reserveCapacity(Self.limit)
    }

    var isEmpty: Bool { batch.isEmpty }
    var isFull: Bool { batch.signals.count >= Self.limit }

    /// Decodes one report heard at `time` (engine µs: CLOCK_BOOTTIME live, capture time in
    /// replay) and adds its signal, or counts its rejected frame; any other report goes to the
    /// table of other devices, when there is one.
    mutating func add(_ report: AdvertisingReport, at time: Int64) {
        switch decoder.decode(report.data) {
        case .signal(let signal):
            batch.signals.append(
                ScannedSignal(
                    signal: signal, address: report.address, rssi: report.rssi,
                    txPower: report.txPower ?? report.data.txPowerLevel, time: time))
        case .rejected:
            batch.rejectedFrames += 1
        case .none:
            devices?.record(report, at: time)
        }
    }

    /// The batch so far, leaving an empty one with room for `limit` signals.
    mutating func take() -> ScannedSignalBatch {
        var taken = ScannedSignalBatch()
        taken.signals.reserveCapacity(Self.limit)
        swap(&taken, &batch)
        return taken
    }
}
