import Logging
import ServiceLifecycle

// A live backend adds its own counters to status replies (read on the hub's event loop while
// the backend runs on its own thread, so they are atomics).
extension HCIScannerBackend: StatusContributor {
    package func contribute(to status: inout StatusMessage, for query: StatusQuery) { status.hci = hciStatus }
}

extension BlueZScannerBackend: StatusContributor {
    func contribute(to status: inout StatusMessage, for query: StatusQuery) { status.bluez = counters.status }
}

/// Builds the live scanner backend a configuration names for one adapter, feeding `sink`. The
/// daemon builds one per adapter (`ScannerSet`); the replay backend is not live and is built by
/// the daemon itself.
///
/// `retriesMissingAdapter`: the daemon (true) waits for an adapter that is not there yet, state
/// `down`, retrying with backoff; `beacond scan` (false) fails at once with the reason.
package enum LiveScanner {
    package static func make(
        _ scanner: DaemonConfiguration.Scanner, adapter: String, record: DaemonConfiguration.Record,
        sink: any AdvertisementSink, retriesMissingAdapter: Bool, kernelFilter: HCIKernelFilter? = nil,
        logger: Logger, logLimiter: LogRateLimiter = LogRateLimiter()
    ) throws -> any Service {
        switch scanner.backend {
        case .hci:
            let configuration = HCIScannerConfiguration(
                scanner, adapter: adapter, retriesMissingAdapter: retriesMissingAdapter)
            do {
                // Checked before the recorder rotates any file.
                try configuration.validate()
                let recorder = try record.path.map { path throws(BTSnoopRecorderError) in
                    try BTSnoopRecorder(
                        path: path, maxBytes: record.maxMB * 1_048_576, keep: record.keep,
                        logger: logger)
                }
                return try HCIScannerBackend(
                    configuration: configuration, sink: sink, recorder: recorder,
                    kernelFilter: recorder == nil ? kernelFilter : nil, logger: logger, logLimiter: logLimiter)
            } catch {
                throw DaemonStartError(description: "\(error)")
            }
        case .bluez:
            if record.path != nil {
                throw DaemonStartError(
                    description: "--record needs raw HCI; the bluez backend has none: use --backend hci")
            }
            do {
                return try BlueZScannerBackend(
                    configuration: BlueZScannerConfiguration(
                        scanner, adapter: adapter, retriesMissingAdapter: retriesMissingAdapter),
                    sink: sink, logger: logger, logLimiter: logLimiter)
            } catch {
                throw DaemonStartError(
                    description: "cannot create the bluez scanner's stop eventfd: \(errnoText(error.errno))")
            }
        case .replay:
            throw DaemonStartError(description: "the replay backend is not a live scanner")
        }
    }
}
