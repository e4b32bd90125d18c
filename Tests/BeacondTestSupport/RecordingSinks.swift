import BLEPayload
import BeacondCore
import Logging
import Synchronization

/// Keeps what a scanner backend (hci or bluez) hands its sink.
package final class RecordingSink: AdvertisementSink {
    package typealias StateChange = (state: ScannerStatus.State, detail: String?)

    package struct Snapshot {
        package var reports: [OwnedAdvertisingReport] = []
        package var bootMicros: [Int64] = []
        package var flushes = 0
        /// Reports received since the last flush.
        package var unflushed = 0
        package var states: [StateChange] = []
    }

    private let state = Mutex(Snapshot())

    package init() {}

    package func receive(_ report: AdvertisingReport, bootMicros: Int64) {
        let owned = report.owned()
        state.withLock {
            $0.reports.append(owned)
            $0.bootMicros.append(bootMicros)
            $0.unflushed += 1
        }
    }

    package func flush() {
        state.withLock {
            $0.flushes += 1
            $0.unflushed = 0
        }
    }

    package func scannerStateChanged(_ newState: ScannerStatus.State, detail: String?) {
        state.withLock { $0.states.append((newState, detail)) }
    }

    package var snapshot: Snapshot { state.withLock { $0 } }
    package var reports: [OwnedAdvertisingReport] { state.withLock { $0.reports } }
    package var states: [StateChange] { state.withLock { $0.states } }
    package var lastState: StateChange? { state.withLock { $0.states.last } }
    package var flushCount: Int { state.withLock { $0.flushes } }

    package func waitForReports(_ count: Int, within seconds: Double = 5) async -> Bool {
        await waitUntil(within: seconds) { state.withLock { $0.reports.count >= count } }
    }

    /// Waits for a state change to `wanted` after the first `index` changes, whose detail
    /// contains `text` and satisfies `detail`.
    package func waitForState(
        _ wanted: ScannerStatus.State, containing text: String = "", after index: Int = 0,
        within seconds: Double = 5, detail: (String) -> Bool = { _ in true }
    ) async -> Bool {
        await waitUntil(within: seconds) {
            state.withLock {
                $0.states.dropFirst(index).contains {
                    let shown = $0.detail ?? ""
                    return $0.state == wanted && (text.isEmpty || shown.contains(text)) && detail(shown)
                }
            }
        }
    }
}

/// A swift-log handler that keeps every entry.
package struct CapturingLogHandler: LogHandler {
    package struct Entry: Sendable {
        package var level: Logger.Level
        package var message: String
        package var metadata: [String: String]
    }

    package final class Store: Sendable {
        private let entries = Mutex<[Entry]>([])
        package init() {}
        package var all: [Entry] { entries.withLock { $0 } }
        package func append(_ entry: Entry) { entries.withLock { $0.append(entry) } }
        package func at(_ level: Logger.Level) -> [Entry] { all.filter { $0.level == level } }
    }

    package let store: Store
    package var metadata: Logger.Metadata = [:]
    package var logLevel: Logger.Level = .trace

    package init(store: Store) { self.store = store }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        var merged: [String: String] = [:]
        for (key, value) in metadata.merging(event.metadata ?? [:], uniquingKeysWith: { $1 }) {
            merged[key] = "\(value)"
        }
        store.append(Entry(level: event.level, message: "\(event.message)", metadata: merged))
    }

    package static func logger() -> (Logger, Store) {
        let store = Store()
        return (Logger(label: "test.remote") { _ in CapturingLogHandler(store: store) }, store)
    }
}
