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
