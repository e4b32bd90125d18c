import CircuitState
import NIOCore

/// Receives what the publisher sends. Called on the hub's event loop.
protocol TrackStateSubscriber: AnyObject {
    /// Whether this subscriber asked for `{"type":"beacon"}` updates.
    var wantsBeacons: Bool { get }
    /// A new state message, one complete line.
    func deliver(state line: ByteBuffer)
    /// The fan-out's first pass: the line straight to the socket when nothing waits for this
    /// subscriber. True when it is taken care of (sent, or nothing to send to); false when it must
    /// go through `deliverQueued(state:)` in the second pass.
    func deliverDirectly(state line: ByteBuffer) -> Bool
    /// The fan-out's second pass, for a subscriber whose `deliverDirectly(state:)` was false.
    func deliverQueued(state line: ByteBuffer)
    /// A beacon update line, already coalesced by the hub to at most 4 per second per beacon.
    func deliver(beacon line: ByteBuffer)
}

extension TrackStateSubscriber {
    func deliverDirectly(state line: ByteBuffer) -> Bool { false }
    func deliverQueued(state line: ByteBuffer) { deliver(state: line) }
}

/// The socket server's output: hands each publication's line (rendered once, by the hub) to every
/// subscriber, and each beacon update to the subscribers that asked for them. Status requests go
/// to the `StatusBoard`, to which it adds its counters.
///
/// It lives on the hub's event loop, and every entry point checks that it runs there.
// @unchecked Sendable: confined to the hub's event loop (every entry point runs there).
package final class TrackStatePublisher: HubOutput, StatusContributor, @unchecked Sendable {
    package let eventLoop: any EventLoop
    /// The last state message as sent, for new subscribers; empty before the first publication.
    private(set) var stateLine = ByteBuffer()
    /// The subscribers in one contiguous array, which the fan-out walks; `subscriberSlots` finds
    /// one in it (removal moves the last one into its slot).
    private var subscribers: ContiguousArray<TrackStateSubscriber> = []
    private var subscriberSlots: [ObjectIdentifier: Int] = [:]
    private var beaconSubscribers = 0
    private(set) var counters = Counters()

    struct Counters {
        var beaconUpdates = 0
    }

    package init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    // MARK: HubOutput

    /// While a subscriber asked for beacon updates.
    package var wantsBeaconUpdates: Bool { beaconSubscribers > 0 }

    package func receive(_ event: HubEvent) {
        switch event {
        case .published(let publication): send(publication)
        case .beaconUpdate(let update): send(update)
        case .remoteFetched: break
        }
    }

    package func contribute(to status: inout StatusMessage, for query: StatusQuery) {
        status.counters.beaconUpdates = counters.beaconUpdates
        status.counters.subscribers = subscribers.count
    }

    // MARK: Subscribers

    func subscribe(_ subscriber: TrackStateSubscriber) {
        eventLoop.preconditionInEventLoop()
        let id = ObjectIdentifier(subscriber)
        if let slot = subscriberSlots[id] {
            subscribers[slot] = subscriber
        } else {
            subscriberSlots[id] = subscribers.count
            subscribers.append(subscriber)
        }
        recountBeaconSubscribers()
    }

    func unsubscribe(_ subscriber: TrackStateSubscriber) {
        eventLoop.preconditionInEventLoop()
        guard let slot = subscriberSlots.removeValue(forKey: ObjectIdentifier(subscriber)) else { return }
        let last = subscribers.removeLast()
        if slot < subscribers.count {
            subscribers[slot] = last
            subscriberSlots[ObjectIdentifier(last)] = slot
        }
        recountBeaconSubscribers()
    }

    /// Call when a subscriber's `wantsBeacons` changes: the hub reports heard beacons only while
    /// some output wants them.
    func recountBeaconSubscribers() {
        eventLoop.preconditionInEventLoop()
        beaconSubscribers = subscribers.reduce(0) { $0 + ($1.wantsBeacons ? 1 : 0) }
    }

    var subscriberCount: Int {
        eventLoop.preconditionInEventLoop()
        return subscribers.count
    }

    // MARK: State

    /// Two passes: first every subscriber with nothing waiting gets the line with one `send(2)`,
    /// one after the other with no other work in between; then the rest (backed up, or with no
    /// direct path) through their pipelines and bounded queues, where coalescing and drop notices
    /// apply. A backed-up client's queue work so never delays an idle client's line.
    private func send(_ publication: Publication) {
        let line = ByteBuffer(bytes: publication.line)
        stateLine = line
        var queued = ContiguousArray<TrackStateSubscriber>()
        for subscriber in subscribers where !subscriber.deliverDirectly(state: line) { queued.append(subscriber) }
        for subscriber in queued { subscriber.deliverQueued(state: line) }
    }

    // MARK: Beacons

    private func send(_ update: BeaconUpdate) {
        guard beaconSubscribers > 0 else { return }
        let message = BeaconMessage(time: WallTime(micros: MonotonicClock.wallMicros()), beacon: update.report)
        let line = ByteBuffer(bytes: message.line)
        counters.beaconUpdates += 1
        for subscriber in subscribers where subscriber.wantsBeacons { subscriber.deliver(beacon: line) }
    }
}
