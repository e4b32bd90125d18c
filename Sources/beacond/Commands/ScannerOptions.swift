import ArgumentParser
import BeacondCore

/// The live scanner's flags, shared by `run` and `scan`. Each overrides its config key.
struct ScannerOptions: ParsableArguments {
    @Option(key: .scannerBackend, help: "Scanner backend: hci or bluez; run also takes replay", valueName: "backend")
    var backend: ConfigFlag?

    @Option(
        name: .configKey(.scannerAdapter),
        help: .configKey(
            .scannerAdapter, "Bluetooth adapter; give it again to scan several at once, or auto (run, hci) for all",
            valueName: "hciN"))
    var adapter: [String] = []

    @Option(key: .scannerCompanyID, help: "GeoRacing company id, decimal or 0x hex", valueName: "id")
    var companyID: ConfigFlag?

    @Flag(key: .scannerActive, help: "hci: scan actively, sending scan requests; passive by default")
    var active = false

    @Option(key: .scannerScanInterval, help: "hci: how often the controller starts listening, ms", valueName: "ms")
    var scanIntervalMs: ConfigFlag?

    @Option(
        key: .scannerScanWindow, help: "hci: how long it listens each time, ms; at most the interval",
        valueName: "ms")
    var scanWindowMs: ConfigFlag?

    @Option(key: .recordPath, help: "hci: record what the controller sends, as btsnoop", valueName: "file")
    var record: ConfigFlag?

    @Option(key: .recordMaxMB, help: "Rotate the recording past this size, MB", valueName: "mb")
    var recordMaxMB: ConfigFlag?

    @Option(key: .recordKeep, help: "Rotated recordings kept: FILE.1 ... FILE.N", valueName: "n")
    var recordKeep: ConfigFlag?

    /// The flags given.
    var flags: [ConfigFlag?] {
        [
            backend, adapter.isEmpty ? nil : ConfigFlag(.scannerAdapter, adapter.joined(separator: ",")), companyID,
            .switched(.scannerActive, active), scanIntervalMs, scanWindowMs, record,
            recordMaxMB, recordKeep,
        ]
    }
}
