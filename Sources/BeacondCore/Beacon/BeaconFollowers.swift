import BLEPayload
import CircuitState
import NIOCore
import NIOPosix
import Synchronization

/// Race control polled by the beacon itself (`beacond beacon --remote-url`): the poller's sink.
/// Race control is fresh for `staleAfter` after each successful fetch, on CLOCK_BOOTTIME; at that
/// instant the transmitter goes silent unless a newer fetch came.
final class BeaconRemoteFollower: RemoteStateSink {
    private struct State {
        var snapshot: RemoteSnapshot?
        var fetchedBoot: Int64?
        var problem: String?
    }

    private let update: @Sendable (BeaconInput) -> Void
    private let staleAfter: Int64
    private let state = Mutex(State())
    private let clock: @Sendable () -> Int64

    /// `update` receives each input, in order of the poller's results and staleness deadlines.
    init(
        staleAfter: Int64, clock: @escaping @Sendable () -> Int64 = { MonotonicClock.bootMicros() },
        update: @escaping @Sendable (BeaconInput) -> Void
    ) {
        self.update = update
        self.staleAfter = staleAfter
        self.clock = clock
    }

    func remoteFetched(_ snapshot: RemoteSnapshot, wallMicros: Int64) async {
        let now = clock()
        state.withLock {
            $0.snapshot = snapshot
            $0.fetchedBoot = now
            $0.problem = nil
        }
        apply()
    }

    func remoteFailed(_ failure: RemoteFailure) async {
        state.withLock { $0.problem = failure.reason }
        apply()
    }

    /// The input race control gives now.
    var input: BeaconInput {
        let now = clock()
        return state.withLock { state in
            guard let snapshot = state.snapshot, let fetched = state.fetchedBoot else {
                return .none(reason: "race control not reached yet" + (state.problem.map { ": \($0)" } ?? ""))
            }
            let fresh = now - fetched < staleAfter
            return .raceControl(
                mode: snapshot.trackMode, fresh: fresh, temperature: snapshot.temperature, problem: state.problem)
        }
    }

    func apply() { update(input) }

    /// Re-evaluates freshness when the last fetch turns stale; returns at cancellation.
    func watchStaleness() async {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        while !Task.isCancelled {
            let deadline = state.withLock { $0.fetchedBoot.map { $0 &+ staleAfter } }
            let wait = deadline.map { max(0, $0 - clock()) + 1_000 } ?? staleAfter
            do {
                try await loop.wait(for: .microseconds(wait))
            } catch {
                return
            }
            apply()
        }
    }
}

/// Race control as a daemon follows it (`beacond beacon --socket`): its published `remote` part,
/// only while fresh. Never the fused mode: that includes beacons heard over the air.
enum BeaconDaemonFollower {
    static func input(_ event: TrackStateFeed.Event) -> BeaconInput {
        switch event {
        case .connected(let state), .state(let state):
            guard let remote = state.remote else {
                // Null both without remote.url and before the first fetch (docs/protocol.md).
                return .none(reason: "the daemon has no race-control state (no remote.url, or no fetch yet)")
            }
            return .raceControl(
                mode: remote.mode.flatMap(TrackMode.init(rawValue:)), fresh: remote.fresh,
                temperature: remote.temperature, problem: remote.lastError)
        case .lost(let reason):
            return .none(reason: "the daemon is unreachable: \(reason)")
        }
    }
}
