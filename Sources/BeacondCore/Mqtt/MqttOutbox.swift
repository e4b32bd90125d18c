import Glibc
import Synchronization

/// The hand-over between the hub's event loop and the MQTT network thread, without the lock: a bounded
/// queue of states, a bounded queue of sightings, and the connection's view. Pure, so the coalescing
/// and dropping rules are unit-tested; `MqttOutbox` puts it behind a lock.
///
/// Connected, every state is sent, in order (a storm goes out in batches); past `maxStates` unsent the
/// oldest are dropped as coalesced. Disconnected, states coalesce to the latest, which is sent on the
/// next connect.
package struct MqttOutboxState: Sendable {
    package struct Sighting: Hashable, Sendable {
        package var topic: String
        package var payload: [UInt8]
    }

    /// What the network thread publishes next: states first, in order, then sightings.
    package struct Work: Sendable {
        package var states: [[UInt8]] = []
        package var sightings: [Sighting] = []
        package var isEmpty: Bool { states.isEmpty && sightings.isEmpty }
    }

    package let maxSightings: Int
    package let maxStates: Int
    /// Publishes handed to libmosquitto and not yet written or acknowledged; past this nothing is
    /// taken, states queue (then coalesce) and sightings queue (then drop), so libmosquitto's own
    /// queue stays bounded.
    package let maxInflight: Int
    /// The latest state payload, kept after it is sent: it is sent again on every (re)connect, since
    /// a broker that restarted may have lost its retained copy.
    private(set) var latestState: [UInt8]?
    private(set) var states: [[UInt8]] = []
    private(set) var sightings: [Sighting] = []
    private(set) var inflight = 0
    package private(set) var status = MqttStatus()
    private var everConnected = false

    package init(maxSightings: Int = 256, maxStates: Int = 64, maxInflight: Int = 256) {
        self.maxSightings = max(1, maxSightings)
        self.maxStates = max(1, maxStates)
        self.maxInflight = max(1, maxInflight)
    }

    package mutating func setIdentity(url: String, node: String) {
        status.url = url
        status.node = node
    }

    /// A sighting dropped before it reached the queue (the broker away, the coalescer full).
    package mutating func dropSighting() { status.droppedSightings += 1 }

    /// libmosquitto refused `refused` taken states (the connection just went): the latest is sent
    /// again, unless a newer one is already queued; the others count as coalesced.
    package mutating func requeueLatestState(refused: Int) {
        guard refused > 0 else { return }
        guard states.isEmpty, let latestState else {
            status.coalescedStates += refused
            return
        }
        status.coalescedStates += refused - 1
        states = [latestState]
    }

    package mutating func offer(state payload: [UInt8]) {
        latestState = payload
        let keep = status.connected ? maxStates - 1 : 0
        if states.count > keep {
            status.coalescedStates += states.count - keep
            states.removeFirst(states.count - keep)
        }
        states.append(payload)
    }

    /// Queued while connected and there is room; else dropped and counted.
    package mutating func offer(sighting: Sighting) {
        guard status.connected, sightings.count < maxSightings else {
            status.droppedSightings += 1
            return
        }
        sightings.append(sighting)
    }

    /// Whether `take()` would return work: the network thread need not be woken otherwise.
    package var hasWork: Bool {
        status.connected && inflight < maxInflight && (!states.isEmpty || !sightings.isEmpty)
    }

    /// What to publish now: nothing while disconnected or with `maxInflight` publishes outstanding.
    package mutating func take() -> Work {
        guard status.connected, inflight < maxInflight else { return Work() }
        var work = Work()
        var room = maxInflight - inflight
        let stateCount = min(room, states.count)
        work.states = Array(states.prefix(stateCount))
        states.removeFirst(stateCount)
        room -= stateCount
        let sightingCount = min(room, sightings.count)
        work.sightings = Array(sightings.prefix(sightingCount))
        sightings.removeFirst(sightingCount)
        return work
    }

    /// The network thread handed `states` and `sightings` publishes to libmosquitto (accepted ones only).
    package mutating func handedOver(states count: Int, sightings sightingCount: Int) {
        status.publishedStates += count
        status.publishedSightings += sightingCount
        inflight += count + sightingCount
    }

    /// libmosquitto wrote (QoS 0) or got the acknowledgement of (QoS 1, 2) one publish.
    package mutating func completed() { inflight = max(0, inflight - 1) }

    /// The periodic republish (`MqttPublisher.republishInterval`): the latest state, to be sent again
    /// as it is (not a change: no counter but `inflight` moves), when connected, nothing newer is
    /// queued and there is room in flight; else nil (a queued state goes out anyway).
    package mutating func takeRepublish() -> [UInt8]? {
        guard status.connected, states.isEmpty, inflight < maxInflight, let latestState else { return nil }
        inflight += 1
        return latestState
    }

    /// libmosquitto refused the republish `takeRepublish` gave.
    package mutating func republishRefused() { inflight = max(0, inflight - 1) }

    /// The broker accepted the connection: the latest state goes out again.
    package mutating func connected() {
        if everConnected { status.reconnects += 1 }
        everConnected = true
        status.connected = true
        status.lastError = nil
        inflight = 0
        if let latestState {
            status.coalescedStates += max(0, states.count - 1)
            states = [latestState]
        }
    }

    /// The connection failed or ended: queued sightings are dropped and counted; queued states
    /// coalesce to the latest.
    package mutating func disconnected(reason: String?) {
        status.connected = false
        if let reason { status.lastError = reason }
        status.droppedSightings += sightings.count
        sightings.removeAll()
        if states.count > 1 {
            status.coalescedStates += states.count - 1
            states.removeFirst(states.count - 1)
        }
        inflight = 0
    }
}

/// `MqttOutboxState` behind a lock, with the network thread's wake-up. The hub's loop only ever takes
/// the lock for a copy of a payload: it never waits on the network.
package final class MqttOutbox: Sendable {
    private struct Guarded {
        var state: MqttOutboxState
        /// Set once the network thread was woken for work it has not taken yet, so a burst of
        /// offers wakes it once.
        var wakePending = false
        var wake: @Sendable () -> Void = {}
    }

    private let guarded: Mutex<Guarded>

    package init(_ state: MqttOutboxState = MqttOutboxState()) {
        guarded = Mutex(Guarded(state: state))
    }

    /// How to wake the thread that calls `take()`; set before any `update`.
    package func setWake(_ wake: @escaping @Sendable () -> Void) {
        guarded.withLock { $0.wake = wake }
    }

    /// Runs `body` under the lock, and wakes the network thread if there is work for it now and it
    /// was not woken for it already (not for every acknowledgement or counter). The wake-up runs
    /// after the lock is released.
    package func update<Result>(_ body: (inout MqttOutboxState) -> Result) -> Result {
        let (result, wake) = guarded.withLock { guarded -> (Result, (@Sendable () -> Void)?) in
            let result = body(&guarded.state)
            guard !guarded.wakePending, guarded.state.hasWork else { return (result, nil) }
            guarded.wakePending = true
            return (result, guarded.wake)
        }
        wake?()
        return result
    }

    package var status: MqttStatus { update { $0.status } }

    /// The network thread's side: what to publish now (possibly nothing).
    package func take() -> MqttOutboxState.Work {
        guarded.withLock { guarded in
            guarded.wakePending = false
            return guarded.state.take()
        }
    }
}

extension MqttOutbox: StatusContributor {
    package func contribute(to status: inout StatusMessage, for query: StatusQuery) { status.mqtt = self.status }
}
