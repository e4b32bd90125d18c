import BLEPayload
import Synchronization

/// `beacond scan`'s sink: prints each report as `replay` would, and scanner state changes on
/// stderr. One sink per adapter; with several, they share one `ScanPrinter`, and each report
/// names the adapter that heard it.
// @unchecked Sendable: `cameUp` is touched only by the backend's thread; printing goes through the printer's lock.
package final class PrintingAdvertisementSink: AdvertisementSink, @unchecked Sendable {
    private let printer: ScanPrinter
    /// Printed with each report and state change when the scan has several adapters.
    private let adapter: String?
    /// Until the scanner first comes up, a failure is the command's error, printed once by it.
    private var cameUp = false

    package init(printer: ScanPrinter, adapter: String? = nil) {
        self.printer = printer
        self.adapter = adapter
    }

    /// A sink of its own printer: one adapter.
    package convenience init(printer: ReportPrinter) {
        self.init(printer: ScanPrinter(printer))
    }

    package var readerGone: Bool { printer.readerGone }
    package var readerGoneEvents: AsyncStream<Void> { printer.readerGoneEvents }

    package func receive(_ report: AdvertisingReport, bootMicros: Int64) {
        printer.print(report, adapter: adapter)
    }

    package func flush() { printer.flush() }

    package func scannerStateChanged(_ state: ScannerStatus.State, detail: String?) {
        if state == .up { cameUp = true }
        guard cameUp else { return }
        printer.flush()
        let name = adapter.map { " " + $0 } ?? ""
        printError(
            "beacond scan: scanner\(name) \(state.rawValue)\(detail.map { ": \(TerminalText.escaped($0))" } ?? "")")
    }

    package func summary(elapsedMicros: Int64) -> String { printer.summary(elapsedMicros: elapsedMicros) }
}

/// The printer `beacond scan`'s sinks share, one per adapter, each on its backend's thread.
// @unchecked Sendable: `printer` is touched only under `lock`.
package final class ScanPrinter: @unchecked Sendable {
    private let lock = Mutex(())
    private var printer: ReportPrinter
    private let readerGoneFlag = Atomic<Bool>(false)
    private let readerGoneEvent = AsyncStream.makeStream(of: Void.self)

    package init(_ printer: ReportPrinter) {
        self.printer = printer
    }

    /// stdout's reader went away (`beacond scan | head`): time to stop.
    package var readerGone: Bool { readerGoneFlag.load(ordering: .relaxed) }

    /// Ends when stdout's reader went away.
    package var readerGoneEvents: AsyncStream<Void> { readerGoneEvent.stream }

    func print(_ report: AdvertisingReport, adapter: String?) {
        lock.withLock { _ in printer.print(report, adapter: adapter) }
    }

    func flush() {
        let gone = lock.withLock { _ in
            printer.output.flush()
            return printer.output.readerGone
        }
        guard gone, !readerGoneFlag.exchange(true, ordering: .relaxed) else { return }
        readerGoneEvent.continuation.finish()
    }

    /// The closing line on stderr; call once the backends have stopped.
    package func summary(elapsedMicros: Int64) -> String {
        let seconds = Double(max(elapsedMicros, 1)) / 1_000_000
        return lock.withLock { _ in
            "scan: \(printer.reports) reports, \(printer.signalSummary); "
                + "\(Int(seconds.rounded())) s, \(Int(Double(printer.reports) / seconds)) reports/s"
        }
    }
}
