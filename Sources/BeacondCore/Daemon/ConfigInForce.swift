import Synchronization

/// Which configuration file the daemon runs with, and how its SIGHUP reloads went: `status.config`.
/// The reload service writes it, the status provider reads it on the hub's loop.
final class ConfigInForce: Sendable {
    private struct Record {
        var file: ConfigFileIdentity?
        var loadedWallMicros: Int64
        var loadedBootMicros: Int64
        var reloads = 0
        var failures = 0
        var lastFailure: String?
    }

    private let record: Mutex<Record>

    /// The configuration loaded at start, from `file` (nil: no config file).
    init(
        file: ConfigFileIdentity?, wallMicros: Int64 = MonotonicClock.wallMicros(),
        bootMicros: Int64 = MonotonicClock.bootMicros()
    ) {
        record = Mutex(Record(file: file, loadedWallMicros: wallMicros, loadedBootMicros: bootMicros))
    }

    /// A reload was applied: `file` is now in force, and no refusal is pending.
    func applied(
        _ file: ConfigFileIdentity?, wallMicros: Int64 = MonotonicClock.wallMicros(),
        bootMicros: Int64 = MonotonicClock.bootMicros()
    ) {
        record.withLock {
            $0.file = file
            $0.loadedWallMicros = wallMicros
            $0.loadedBootMicros = bootMicros
            $0.reloads += 1
            $0.lastFailure = nil
        }
    }

    /// A reload was refused: the running configuration (and its digest) stays.
    func refused(_ error: ConfigurationError) {
        let message = ConfigStatus.cappedFailure(error.description)
        record.withLock {
            $0.failures += 1
            $0.lastFailure = message
        }
    }

    /// `status.config` as of `bootMicros`.
    func status(bootMicros: Int64 = MonotonicClock.bootMicros()) -> ConfigStatus {
        let record = self.record.withLock { $0 }
        let ageMicros = bootMicros.subtractingReportingOverflow(record.loadedBootMicros)
        var status = ConfigStatus(
            path: record.file?.path, sha256: record.file?.sha256.hex,
            loadedAt: TimeFormat.iso8601(micros: record.loadedWallMicros),
            loadedAge: ageMicros.overflow ? 0 : Double(max(0, ageMicros.partialValue)) / 1_000_000)
        status.reloads = record.reloads
        status.reloadFailures = record.failures
        status.lastFailure = record.lastFailure
        return status
    }
}

extension ConfigInForce: StatusContributor {
    func contribute(to status: inout StatusMessage, for query: StatusQuery) { status.config = self.status() }
}
