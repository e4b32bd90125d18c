import BeacondCore
import ArgumentParser

/// The live scanner's flags, shared by `run` and `scan`. Each overrides its config key.
struct ScannerOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Scanner backend: hci or bluez; run also takes replay (scanner.backend).",
                               valueName: "backend"))
    var backend: String?

    @Option(help: ArgumentHelp("Bluetooth adapter (scanner.adapter).", valueName: "hciN"))
    var adapter: String?

    @Option(name: .customLong("company-id"),
            help: ArgumentHelp("GeoRacing company id, decimal or 0x hex (scanner.company_id).", valueName: "id"))
    var companyID: String?

    @Flag(help: "hci: scan actively, sending scan requests (scanner.active). Passive by default.")
    var active = false

    @Option(name: .customLong("scan-interval-ms"),
            help: ArgumentHelp("hci: how often the controller starts listening, ms (scanner.scan_interval_ms).",
                               valueName: "ms"))
    var scanIntervalMs: String?

    @Option(name: .customLong("scan-window-ms"),
            help: ArgumentHelp("hci: how long it listens each time, ms; at most the interval (scanner.scan_window_ms).",
                               valueName: "ms"))
    var scanWindowMs: String?

    @Option(help: ArgumentHelp("hci: record what the controller sends, as btsnoop (record.path).", valueName: "file"))
    var record: String?

    @Option(name: .customLong("record-max-mb"),
            help: ArgumentHelp("Rotate the recording past this size, MB (record.max_mb).", valueName: "mb"))
    var recordMaxMB: String?

    @Option(name: .customLong("record-keep"),
            help: ArgumentHelp("Rotated recordings kept: FILE.1 ... FILE.N (record.keep).", valueName: "n"))
    var recordKeep: String?

    /// These flags as overrides on top of `base`.
    func applied(to base: DaemonOverrides) -> DaemonOverrides {
        var overrides = base
        overrides.backend = backend
        overrides.adapter = adapter
        overrides.companyID = companyID
        overrides.active = active ? true : nil
        overrides.scanIntervalMs = scanIntervalMs
        overrides.scanWindowMs = scanWindowMs
        overrides.record = record
        overrides.recordMaxMB = recordMaxMB
        overrides.recordKeep = recordKeep
        return overrides
    }
}
