import BLEPayload
import CircuitState

/// Signals decoded from advertising reports, and how many GeoRacing frames were rejected and how
/// many were attendees' user beacons, on their way to the hub in one hop of its event loop.
struct ScannedSignalBatch: Sendable {
    var signals: [ScannedSignal] = []
    var rejectedFrames = 0
    var userBeacons = 0

    var isEmpty: Bool { signals.isEmpty && rejectedFrames == 0 && userBeacons == 0 }

    /// Appends `other`'s signals and rejected frames after this batch's.
    mutating func append(_ other: ScannedSignalBatch) {
        signals.append(contentsOf: other.signals)
        rejectedFrames += other.rejectedFrames
        userBeacons += other.userBeacons
    }

    /// Empties the batch, keeping its room for signals.
    mutating func removeAll() {
        signals.removeAll(keepingCapacity: true)
        rejectedFrames = 0
        userBeacons = 0
    }

    /// Hands the batch to the hub; call on its event loop. `willIngest` sees each signal's time
    /// just before it goes in (replay moves its virtual clock there).
    func apply(to hub: TrackStateHub, willIngest: (Int64) -> Void = { _ in }) {
        hub.countFrames(rejected: rejectedFrames, userBeacons: userBeacons)
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
    /// Stamped on each signal: the adapter that heard it, and whether the hub filters copies (then
    /// each signal carries its copy key).
    let adapter: ScannerAdapterTag?
    private var batch = ScannedSignalBatch()
    /// Reports for `devices` not yet recorded, when it defers them (`recordDevices`).
    private var sightings: [NearbyDevices.Sighting] = []
    private let defersDevices: Bool

    /// `defersDevices`: other devices' reports are recorded under one lock per batch (a live
    /// burst, which calls `recordDevices` at its end) rather than one lock each.
    init(
        decoder: GeoRacingDecoder, devices: NearbyDeviceTable? = nil, defersDevices: Bool = false,
        adapter: ScannerAdapterTag? = nil
    ) {
        self.decoder = decoder
        self.devices = devices
        self.adapter = adapter
        self.defersDevices = defersDevices && devices != nil
        batch.signals.reserveCapacity(Self.limit)
        if self.defersDevices { sightings.reserveCapacity(Self.limit) }
    }

    var isEmpty: Bool { batch.isEmpty }
    var isFull: Bool { batch.signals.count >= Self.limit }

    /// Decodes one report heard at `time` (engine µs: CLOCK_BOOTTIME live, capture time in
    /// replay) and adds its signal, or counts its rejected frame; any other report goes to the
    /// table of other devices, when there is one.
    mutating func add(_ report: AdvertisingReport, at time: Int64) {
        switch decoder.decode(report.data) {
        case .signal(let signal):
            var scanned = ScannedSignal(
                signal: signal, address: report.address, rssi: report.rssi,
                txPower: report.txPower ?? report.data.txPowerLevel, time: time)
            if let adapter {
                scanned.adapter = adapter.index
                if adapter.filtersCopies {
                    scanned.copyKey = AdapterCopyFilter.key(
                        address: report.address.rawValue, payload: report.data.bytes)
                }
            }
            batch.signals.append(scanned)
        case .rejected:
            batch.rejectedFrames += 1
        case .userBeacon:
            batch.userBeacons += 1
        case .none:
            guard let devices else { return }
            guard defersDevices else { return devices.record(report, at: time) }
            sightings.append(NearbyDevices.Sighting(report, at: time))
            if sightings.count >= Self.limit { recordDevices() }
        }
    }

    /// Hands the other devices' reports deferred so far to `devices`. `take` and `move` do it
    /// too: call it at the end of a burst that made no batch.
    mutating func recordDevices() {
        guard let devices, !sightings.isEmpty else { return }
        devices.record(sightings)
        sightings.removeAll(keepingCapacity: true)
    }

    /// The batch so far, leaving an empty one with room for `limit` signals.
    mutating func take() -> ScannedSignalBatch {
        recordDevices()
        var taken = ScannedSignalBatch()
        taken.signals.reserveCapacity(Self.limit)
        swap(&taken, &batch)
        return taken
    }

    /// Appends the batch so far to `target` and empties it, keeping its room: allocates nothing.
    mutating func move(into target: inout ScannedSignalBatch) {
        recordDevices()
        target.append(batch)
        batch.removeAll()
    }

    /// Drops the batch so far (its signals could not be delivered).
    mutating func removeAll() { batch.removeAll() }

    /// The signals in the batch so far.
    var count: Int { batch.signals.count }
}
