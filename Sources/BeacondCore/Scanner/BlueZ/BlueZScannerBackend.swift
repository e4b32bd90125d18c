import Logging
import ServiceLifecycle
import Synchronization

/// `--backend bluez`: scans through bluetoothd over D-Bus.
///
/// One thread owns a private libdbus connection to the system bus. It finds the adapter with
/// GetManagedObjects, sets an LE discovery filter with duplicate data, starts discovery,
/// registers an advertisement monitor where BlueZ offers one (see `BlueZAdvertisementMonitor`),
/// restarts discovery every `scanner.bluez_refresh_s` while no monitor is active (see
/// BlueZScanLoop+Refresh.swift), and turns every Device1 update carrying ManufacturerData or RSSI
/// into one report for the sink. It never exits on its own: a missing bus, bluetoothd or adapter is reported as `down`
/// with the reason and retried (1 s doubling to 30 s, sooner when BlueZ signals the adapter's
/// return). Graceful shutdown stops discovery and ends the thread within about 100 ms.
final class BlueZScannerBackend: Service, Sendable {
    let configuration: BlueZScannerConfiguration
    let counters = BlueZScannerCounters()
    private let sink: any AdvertisementSink
    private let logger: Logger
    let logLimiter: LogRateLimiter
    private let stopping = Atomic<Bool>(false)
    /// Wakes the loop's waits between retries at a stop.
    private let stopSignal: WakeSignal

    /// The wake signal is made before the object: Swift 6.3's optimizer crashes on an initializer
    /// that throws while the `Atomic` stored property is already initialized (release builds).
    convenience init(
        configuration: BlueZScannerConfiguration, sink: any AdvertisementSink, logger: Logger,
        logLimiter: LogRateLimiter = LogRateLimiter()
    ) throws(WakeSignal.Failure) {
        let stopSignal = try WakeSignal()
        self.init(
            configuration: configuration, sink: sink, logger: logger, logLimiter: logLimiter, stopSignal: stopSignal)
    }

    private init(
        configuration: BlueZScannerConfiguration, sink: any AdvertisementSink, logger: Logger,
        logLimiter: LogRateLimiter, stopSignal: WakeSignal
    ) {
        self.stopSignal = stopSignal
        self.configuration = configuration
        self.sink = sink
        self.logger = logger
        self.logLimiter = logLimiter
    }

    func run() async throws {
        try await BlockingThreadBridge.run(stop: stop) { [self] in
            try BlueZScanLoop(backend: self).run()
        }
    }

    /// Asks the thread to stop discovery and return.
    func stop() {
        stopping.store(true, ordering: .relaxed)
        stopSignal.signal()
    }

    /// Waits until `deadline` (monotonic µs) or a stop, whichever comes first.
    func waitForStop(until deadline: Int64) {
        stopSignal.wait(micros: deadline - MonotonicClock.micros())
    }

    var isStopping: Bool { stopping.load(ordering: .relaxed) }
    var scanSink: any AdvertisementSink { sink }
    var log: Logger { logger }
}
