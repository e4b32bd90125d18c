import Logging
import ServiceLifecycle

/// Builds the live scanner backend a configuration names, feeding `sink`. The replay backend
/// is not live and is built by the daemon itself.
///
/// `retriesMissingAdapter`: the daemon (true) waits for an adapter that is not there yet, state
/// `down`, retrying with backoff; `beacond scan` (false) fails at once with the reason.
enum LiveScanner {
    static func make(
        _ scanner: DaemonConfiguration.Scanner, record: DaemonConfiguration.Record, sink: any AdvertisementSink,
        retriesMissingAdapter: Bool, logger: Logger
    ) throws -> any Service {
        switch scanner.backend {
        case .hci:
            throw DaemonStartError(description: "the hci backend is not available in this build yet")
        case .bluez:
            throw DaemonStartError(description: "the bluez backend is not available in this build yet")
        case .replay:
            throw DaemonStartError(description: "the replay backend is not a live scanner")
        }
    }
}
