/// How the raw-HCI backend scans and recovers. Durations are integer microseconds.
package struct HCIScannerConfiguration: Hashable, Sendable {
    /// The scan interval and window limits of LE Set Scan Parameters: 2.5 ms to 10.24 s.
    static let minimumInterval: Int64 = 2_500
    static let maximumInterval: Int64 = 10_240_000

    var adapter: String = DaemonConfiguration.Scanner.defaultAdapter
    /// Active scanning sends scan requests (and hears scan responses); passive only listens.
    var active = false
    /// Equal interval and window: the radio listens continuously.
    var interval: Int64 = 100_000
    var window: Int64 = 100_000
    /// Restart the scan when no report arrived for this long; 0 turns the watchdog off.
    var silenceRestart: Int64 = DaemonConfiguration.Scanner.defaultSilenceRestart
    /// The first retry comes after `retryInitial`, each next one after twice the last, at most `retryMax`.
    var retryInitial: Int64 = 1_000_000
    var retryMax: Int64 = 30_000_000
    /// After a burst that read something the reader pauses this long before it polls again, so a
    /// busy air is read in fewer, larger bursts, each one hop to the hub: a wake-up costs more than
    /// the reports it reads (docs/benchmarks.md). A report in a quiet moment is read at once; one
    /// arriving during the pause waits at most this long. At 50,000 reports/s the socket holds 50
    /// reports meanwhile, far below its receive buffer. 0: no pause.
    package var burstPause: Int64 = 1_000
    /// How long the controller has to answer a command.
    package var commandTimeout: Int64 = 2_000_000
    /// true (the daemon): a missing adapter at start is reported `down` and waited for;
    /// false (`beacond scan`): it is an error.
    var retriesMissingAdapter = true

    package init(
        adapter: String = DaemonConfiguration.Scanner.defaultAdapter, active: Bool = false,
        intervalMs: Int = 100, windowMs: Int = 100,
        silenceRestart: Int64 = DaemonConfiguration.Scanner.defaultSilenceRestart,
        retriesMissingAdapter: Bool = true
    ) {
        self.adapter = adapter
        self.active = active
        interval = Int64(intervalMs) * 1000
        window = Int64(windowMs) * 1000
        self.silenceRestart = silenceRestart
        self.retriesMissingAdapter = retriesMissingAdapter
    }

    /// The settings of a configuration's scanner section, for one of its adapters.
    init(_ scanner: DaemonConfiguration.Scanner, adapter: String, retriesMissingAdapter: Bool) {
        self.init(
            adapter: adapter, active: scanner.active, intervalMs: scanner.scanIntervalMs,
            windowMs: scanner.scanWindowMs, silenceRestart: scanner.silenceRestart,
            retriesMissingAdapter: retriesMissingAdapter)
    }

    /// Interval and window in the controller's 0.625 ms units, checked.
    func scanUnits() throws(HCIScannerError) -> (interval: UInt16, window: UInt16) {
        let range = Self.minimumInterval...Self.maximumInterval
        guard range.contains(interval) else {
            throw .invalidConfiguration(
                "scan interval \(DecimalText.format(micros: interval * 1000)) ms is outside 2.5–10240 ms")
        }
        guard range.contains(window) else {
            throw .invalidConfiguration(
                "scan window \(DecimalText.format(micros: window * 1000)) ms is outside 2.5–10240 ms")
        }
        guard window <= interval else {
            throw .invalidConfiguration(
                """
                scan window \(DecimalText.format(micros: window * 1000)) ms is longer than the interval \
                \(DecimalText.format(micros: interval * 1000)) ms
                """
            )
        }
        // Rounded to the nearest unit; both stay within 0x0004...0x4000.
        return (UInt16((interval + 312) / 625), UInt16((window + 312) / 625))
    }

    /// Checks every setting, before anything is opened.
    func validate() throws(HCIScannerError) {
        _ = try scanUnits()
        // libbluetooth reads "hciX" as adapter 0 for any non-number X: insist on digits.
        guard adapter.hasPrefix("hci"), adapter.count > 3, adapter.dropFirst(3).allSatisfy(\.isASCIIDigit) else {
            throw .invalidConfiguration("adapter \"\(adapter)\" is not an adapter name like hci0")
        }
        guard silenceRestart >= 0, retryInitial > 0, retryMax >= retryInitial, commandTimeout > 0 else {
            throw .invalidConfiguration("durations must be positive (silence restart may be 0: off)")
        }
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
