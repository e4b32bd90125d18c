import BLEPayload

/// Settings of the `bluez` backend.
struct BlueZScannerConfiguration: Sendable {
    var adapter: String = DaemonConfiguration.Scanner.defaultAdapter
    var companyID: UInt16 = GeoRacingSignal.defaultCompanyID
    /// Restart discovery after this long (µs) without any device update; 0 turns this off.
    var silenceRestart: Int64 = DaemonConfiguration.Scanner.defaultSilenceRestart
    /// Restart discovery this often (µs) while no advertisement monitor is active; 0 turns this
    /// off (`scanner.bluez_refresh_s`, see `BlueZScanLoop.checkRefresh`).
    var refreshInterval: Int64 = DaemonConfiguration.Scanner.defaultBlueZRefresh
    /// What to do when the first start fails (no system bus, no bluetoothd, no such adapter,
    /// access denied): true (the daemon) stays down and retries with backoff; false (`beacond
    /// scan`) makes `run()` throw the reason at once. Failures after the first start are always
    /// retried.
    var retriesMissingAdapter = true
    /// A D-Bus address to use instead of the system bus (tests); nil: the system bus, which
    /// honours `DBUS_SYSTEM_BUS_ADDRESS`.
    var busAddress: String?
    var monitorRoot = BlueZAdvertisementMonitor.defaultRoot
    var maxDevices = BlueZDeviceTracker.defaultCapacity
    /// Timeout of each blocking call to bluetoothd, ms.
    var callTimeout: Int32 = 5000
    /// Retry delays (µs): the first, doubled after each failure up to the last.
    var initialBackoff: Int64 = 1_000_000
    var maxBackoff: Int64 = 30_000_000

    init() {}

    init(_ scanner: DaemonConfiguration.Scanner, adapter: String, retriesMissingAdapter: Bool) {
        self.adapter = adapter
        companyID = scanner.companyID
        silenceRestart = scanner.silenceRestart
        refreshInterval = scanner.blueZRefresh
        self.retriesMissingAdapter = retriesMissingAdapter
    }
}

/// The bluez backend could not start and was asked not to retry (`retriesMissingAdapter` false).
struct BlueZScannerError: Error, CustomStringConvertible {
    let description: String
}
