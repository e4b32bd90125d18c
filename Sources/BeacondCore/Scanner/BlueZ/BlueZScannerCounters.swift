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

    func writeStatus(into writer: inout JSONWriter) {
        writer.key("bluez")
        writer.beginObject()
        writer.key("updates"); writer.int(updates.load(ordering: .relaxed))
        writer.key("reports"); writer.int(reports.load(ordering: .relaxed))
        writer.key("skipped_properties"); writer.int(skippedProperties.load(ordering: .relaxed))
        writer.key("malformed_signals"); writer.int(malformedSignals.load(ordering: .relaxed))
        writer.key("evicted_devices"); writer.int(evictions.load(ordering: .relaxed))
        writer.endObject()
    }
}
