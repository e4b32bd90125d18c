import BLEPayload
import Synchronization

/// `beacond scan`'s sink: prints each report as `replay` would, and scanner state changes on
/// stderr. Only the backend's thread prints; the counters are read at the end.
// @unchecked Sendable: only the backend's thread prints; the counters are read after it ended.
package final class PrintingAdvertisementSink: AdvertisementSink, @unchecked Sendable {
    private var printer: ReportPrinter
    private let readerGoneFlag = Atomic<Bool>(false)
    private let readerGoneEvent = AsyncStream.makeStream(of: Void.self)
    /// Until the scanner first comes up, a failure is the command's error, printed once by it.
    private var cameUp = false

    package init(printer: ReportPrinter) {
        self.printer = printer
    }

    /// stdout's reader went away (`beacond scan | head`): time to stop.
    package var readerGone: Bool { readerGoneFlag.load(ordering: .relaxed) }

    /// Ends when stdout's reader went away.
    package var readerGoneEvents: AsyncStream<Void> { readerGoneEvent.stream }

    package func receive(_ report: AdvertisingReport, bootMicros: Int64) {
        printer.print(report)
    }

    package func flush() {
        printer.output.flush()
        guard printer.output.readerGone, !readerGoneFlag.exchange(true, ordering: .relaxed) else { return }
        readerGoneEvent.continuation.finish()
    }

    package func scannerStateChanged(_ state: ScannerStatus.State, detail: String?) {
        if state == .up { cameUp = true }
        guard cameUp else { return }
        printer.output.flush()
        printError("beacond scan: scanner \(state.rawValue)\(detail.map { ": \(TerminalText.escaped($0))" } ?? "")")
    }

    /// The closing line on stderr; call once the backend has stopped.
    package func summary(elapsedMicros: Int64) -> String {
        let seconds = Double(max(elapsedMicros, 1)) / 1_000_000
        return "scan: \(printer.reports) reports, \(printer.signalSummary); "
            + "\(Int(seconds.rounded())) s, \(Int(Double(printer.reports) / seconds)) reports/s"
    }
}
