import Synchronization

/// What the bluez backend has seen, readable from any thread.
final class BlueZScannerCounters: Sendable {
    /// Device1 signals carrying ManufacturerData or RSSI.
    let updates = Atomic<Int>(0)
    /// Reports handed to the sink.
    let reports = Atomic<Int>(0)
    /// Properties skipped for an unexpected type.
    let skippedProperties = Atomic<Int>(0)
    /// Signals whose shape was wrong as a whole.
    let malformedSignals = Atomic<Int>(0)
    /// Devices forgotten to keep the table bounded.
    let evictions = Atomic<Int>(0)
    /// Discovery restarts (StopDiscovery, then the filter and StartDiscovery) made while no
    /// advertisement monitor was active.
    let refreshes = Atomic<Int>(0)
    /// Such restarts that failed; each is logged and retried.
    let refreshFailures = Atomic<Int>(0)

    /// The counters for a status reply (`status.bluez`).
    var status: BlueZStatus {
        var status = BlueZStatus()
        status.updates = updates.load(ordering: .relaxed)
        status.reports = reports.load(ordering: .relaxed)
        status.skippedProperties = skippedProperties.load(ordering: .relaxed)
        status.malformedSignals = malformedSignals.load(ordering: .relaxed)
        status.evictedDevices = evictions.load(ordering: .relaxed)
        status.discoveryRefreshes = refreshes.load(ordering: .relaxed)
        status.discoveryRefreshFailures = refreshFailures.load(ordering: .relaxed)
        return status
    }
}
