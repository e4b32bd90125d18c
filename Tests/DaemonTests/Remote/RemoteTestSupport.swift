import BeacondTestSupport
import CircuitState
import Synchronization

@testable import BeacondClient
@testable import BeacondCore

/// Collects what a poller delivers.
final class RecordingRemoteSink: RemoteStateSink {
    enum Event: Hashable, Sendable {
        case fetched(RemoteSnapshot)
        case failed(RemoteFailureKind)
    }

    private let recorded = Mutex<[Event]>([])

    var events: [Event] { recorded.withLock { $0 } }

    func remoteFetched(_ snapshot: RemoteSnapshot, wallMicros: Int64) async {
        recorded.withLock { $0.append(.fetched(snapshot)) }
    }

    func remoteFailed(_ failure: RemoteFailure) async {
        recorded.withLock { $0.append(.failed(failure.kind)) }
    }

    /// Waits until `predicate` holds for the events, up to `seconds`; returns whether it did.
    func wait(within seconds: Double = 5, until predicate: ([Event]) -> Bool) async -> Bool {
        await waitUntil(within: seconds, every: .milliseconds(10)) { predicate(events) }
    }
}

/// What the state-file suites share: a store in a directory of its own, and a GREEN state.
protocol RemoteStateStoreSuite {}

extension RemoteStateStoreSuite {
    static var fetchedAt: Int64 { 1_747_396_810_123_456 }

    /// GREEN, fetched at `fetchedAt`.
    static var green: PersistedRemoteState {
        PersistedRemoteState(snapshot: RemoteSnapshot(globalMode: "GREEN"), fetchedWallMicros: fetchedAt)
    }

    /// `green` as the store writes it.
    static var greenFile: String { String(decoding: RemoteStateStore.encode(green), as: UTF8.self) }

    /// A store in a new temporary directory, and what it logs.
    func makeStore() throws -> (RemoteStateStore, CapturingLogHandler.Store) {
        let (logger, logs) = CapturingLogHandler.logger()
        return (RemoteStateStore(stateDirectory: try RemoteTestTools.temporaryDirectory(), logger: logger), logs)
    }
}
