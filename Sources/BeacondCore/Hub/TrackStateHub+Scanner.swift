import BLEPayload
import BeacondClient
import CircuitState

/// The scanner's side of the hub: its adapters' health, and the filter that counts an advert
/// heard on several adapters once.
extension TrackStateHub {
    /// The scanner, or one of its adapters, came up, went down or stopped. `detail` (why, for
    /// example the adapter is gone) shows in status replies; only the states are published. A new
    /// state, or the first reason given for one, is logged; a new detail alone (the next retry's
    /// delay) only at debug level: the backends log their own failures.
    func setScanner(_ state: ScannerStatus.State, detail: String? = nil, adapter: String? = nil) {
        eventLoop.preconditionInEventLoop()
        let published = scanner
        let previousDetail =
            if let adapter { scannerHealth.adapters.first { $0.name == adapter }?.detail } else { scannerHealth.detail }
        guard let change = scannerHealth.set(state, detail: detail, adapter: adapter) else { return }
        let name = [scanner.backend, adapter].compactMap { $0 }.joined(separator: " ")
        let words = adapter == nil ? state.rawValue : change.after.rawValue
        let reason = detail.map { ": " + TerminalText.escaped($0) } ?? ""
        if change.before != change.after || (previousDetail == nil && detail != nil) {
            logger.log(level: state == .down ? .warning : .info, "scanner \(name) \(words)\(reason)")
        } else if detail != previousDetail, detail != nil {
            logger.debug("scanner \(name) \(words)\(reason)")
        }
        if scanner.state != published.state, scannerHealth.adapters.count > 1 {
            logger.log(
                level: scanner.state == .up ? .info : .warning, "scanner \(scanner.backend) \(scanner.state.rawValue)")
        }
        guard scanner != published else { return }
        republish()
    }

    /// False for another adapter's copy of an advert the filter let through (docs/fusion.md,
    /// "Several adapters"); always true with one adapter.
    func admits(_ item: ScannedSignal) -> Bool {
        copyFilter?.admit(key: item.copyKey, adapter: item.adapter, rssi: item.rssi, now: item.time) ?? true
    }

    /// The copy filter's counters; nil with one adapter.
    package var copyCounters: AdapterCopyFilter.Counters? { copyFilter?.counters }
}
