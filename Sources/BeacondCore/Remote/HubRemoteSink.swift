import CircuitState
import NIOCore

/// Delivers the poller's results to the hub, hopping onto its event loop, and saves each good
/// state, with the evacuation latch as the engine then holds it, to the store (off the loop).
struct HubRemoteSink: RemoteStateSink {
    private let hub: TrackStateHub
    private let store: RemoteStateStore?

    /// `store` nil: nothing is saved (replay demos, tests).
    init(hub: TrackStateHub, store: RemoteStateStore?) {
        self.hub = hub
        self.store = store
    }

    private struct Applied: Sendable {
        var latched: RemoteSnapshot?
    }

    func remoteFetched(_ snapshot: RemoteSnapshot, wallMicros: Int64) async {
        let applied = try? await hub.eventLoop.submit { [hub] () -> Applied in
            hub.remoteFetched(snapshot)
            let status = hub.engine.remoteStatus(at: hub.engine.clock)
            return Applied(latched: status?.isLatched == true ? (status?.latchedSnapshot ?? snapshot) : nil)
        }.get()
        // A loop that is gone (shutdown) applied nothing: save nothing either.
        guard let applied else { return }
        store?.saveLogged(
            PersistedRemoteState(
                snapshot: snapshot, fetchedWallMicros: wallMicros,
                latchedSnapshot: applied.latched))
    }

    func remoteFailed(_ failure: RemoteFailure) async {
        hub.eventLoop.execute { [hub] in hub.remoteFailed(reason: failure.reason) }
    }
}
