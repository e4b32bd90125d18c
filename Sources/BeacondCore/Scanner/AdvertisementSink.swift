import BLEPayload

/// Where a live scanner backend hands what it hears.
///
/// A backend calls these from its own thread, one call at a time and in order. A report borrows
/// the backend's buffer, so `receive` must use or copy it before returning. Implementations hand
/// their results to an event loop themselves (`HubAdvertisementSink`) or print them (`scan`).
package protocol AdvertisementSink: AnyObject, Sendable {
    /// One advertising report, received at `bootMicros` (CLOCK_BOOTTIME, µs). The report's own
    /// `timestamp` is wall-clock µs, for display and recording.
    func receive(_ report: AdvertisingReport, bootMicros: Int64)

    /// The end of one read burst: deliver whatever `receive` batched.
    func flush()

    /// The scanner came up, went down, or stopped; `detail` says why, for status and logs
    /// (for example "adapter hci0 is gone; retrying in 4 s").
    func scannerStateChanged(_ state: ScannerStatus.State, detail: String?)
}
