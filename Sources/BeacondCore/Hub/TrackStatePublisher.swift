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
    /// A beacon update line, already coalesced to at most 4 per second per beacon.
    func deliver(beacon line: ByteBuffer)
}

extension TrackStateSubscriber {
    func deliverDirectly(state line: ByteBuffer) -> Bool { false }
    func deliverQueued(state line: ByteBuffer) { deliver(state: line) }
}

/// Fans the hub's publications out: renders each state message once and hands the line to every
/// subscriber, coalesces beacon updates per beacon (`BeaconThrottle`), and answers status requests
/// with one rendering shared by a burst of them.
///
/// It lives on the hub's event loop, and every entry point checks that it runs there. Its own
/// timing (the throttle's windows, the status line's reuse) runs on that loop's clock, so an
/// `EmbeddedEventLoop` drives it in tests. Create it before the hub starts.
// @unchecked Sendable: confined to the hub's event loop (every entry point runs there).
package final class TrackStatePublisher: @unchecked Sendable {
    /// How long one status line answers every client that asks, while no state is published:
    /// building one for a full table costs milliseconds, and a thousand clients each asking ten
    /// times a second must not turn that into seconds of the loop's time.
    static let statusReuseInterval: Int64 = 100_000
    /// The shortest time between two updates of one beacon, µs.
    static let beaconInterval: Int64 = 250_000

    package let hub: TrackStateHub
    package var eventLoop: EventLoop { hub.eventLoop }
    /// The last state message as sent, for new subscribers; empty before the first publication.
    private(set) var stateLine = ByteBuffer()
    /// The subscribers in one contiguous array, which the fan-out walks; `subscriberSlots` finds
    /// one in it (removal moves the last one into its slot).
    private var subscribers: ContiguousArray<TrackStateSubscriber> = []
    private var subscriberSlots: [ObjectIdentifier: Int] = [:]
    private var beaconSubscribers = 0
    /// Beacon updates, at most one per beacon per `beaconInterval` (`KeyedCoalescer`). Beyond its
    /// 16,384 beacons in their window (four times the engine's table) an update is dropped.
    private lazy var beaconUpdates = KeyedCoalescer<OverrideKey, Int64>(
        eventLoop: eventLoop, interval: .microseconds(Self.beaconInterval), maxKeys: 16_384
    ) { [unowned self] key, time, atOnce in
        sendBeacon(key, at: atOnce ? time : nil)
    }
    /// The shared status lines: [0] without devices, [1] with them.
    private var statusCache: [(builtAt: Int64, seq: Int, line: ByteBuffer)?] = [nil, nil]
    private var statusProviders: [(inout StatusMessage) -> Void] = []
    private(set) var counters = Counters()
    /// The devices heard that are not GeoRacing beacons, for `{"cmd":"status","devices":true}`;
    /// nil when no scanner records them (the request then gets an empty list). Set before start.
    var nearbyDevices: NearbyDeviceTable?

    struct Counters {
        var beaconUpdates = 0
        /// Status requests answered with a line built for an earlier request.
        var statusReused = 0
    }

    package init(hub: TrackStateHub) {
        self.hub = hub
        hub.addPublicationObserver { [weak self] publication in self?.send(publication) }
    }

    /// Adds their typed parts to every status reply (the socket server's counters, the scanner
    /// backend's, the remote poller's health).
    func addStatusProvider(_ provider: @escaping (inout StatusMessage) -> Void) {
        eventLoop.preconditionInEventLoop()
        statusProviders.append(provider)
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

    /// Call when a subscriber's `wantsBeacons` changes. The hub reports heard beacons only while
    /// some subscriber wants them.
    func recountBeaconSubscribers() {
        eventLoop.preconditionInEventLoop()
        let wanted = subscribers.reduce(0) { $0 + ($1.wantsBeacons ? 1 : 0) }
        guard (wanted > 0) != (beaconSubscribers > 0) else {
            beaconSubscribers = wanted
            return
        }
        beaconSubscribers = wanted
        hub.setBeaconObserver(wanted > 0 ? { [weak self] key, time in self?.beaconHeard(key, at: time) } : nil)
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

    /// The loop's clock, microseconds.
    private var loopMicros: Int64 { Int64(eventLoop.now.uptimeNanoseconds / 1000) }

    private func beaconHeard(_ key: OverrideKey, at time: Int64) {
        beaconUpdates.offer(time, for: key)
    }

    /// Sends `key`'s update as of engine time `time` (nil: now).
    private func sendBeacon(_ key: OverrideKey, at time: Int64?) {
        guard let beacon = hub.beaconReport(for: key, at: time) else { return }
        let message = BeaconMessage(time: WallTime(micros: MonotonicClock.wallMicros()), beacon: beacon)
        let line = ByteBuffer(bytes: message.line)
        counters.beaconUpdates += 1
        for subscriber in subscribers where subscriber.wantsBeacons { subscriber.deliver(beacon: line) }
    }

    // MARK: Status

    /// The status line for a client's request: the one built for an earlier request, if it is
    /// under `statusReuseInterval` old and no state was published since; else a new one.
    /// With `devices`, the line lists the other devices heard (`statusLine(devices: true)`) and is
    /// shared only with requests that asked for them too.
    func sharedStatusLine(devices: Bool = false) -> ByteBuffer {
        eventLoop.preconditionInEventLoop()
        let now = loopMicros
        let slot = devices ? 1 : 0
        if let cached = statusCache[slot], cached.seq == hub.seq, now >= cached.builtAt,
            now - cached.builtAt < Self.statusReuseInterval
        {
            counters.statusReused += 1
            return cached.line
        }
        let line = ByteBuffer(bytes: statusLine(devices: devices))
        statusCache[slot] = (now, hub.seq, line)
        return line
    }

    /// A `{"type":"status"}` line: `statusMessage(listLimit:devices:)`, rendered.
    func statusLine(listLimit: Int = TrackStateHub.statusListLimit, devices: Bool = false) -> [UInt8] {
        statusMessage(listLimit: listLimit, devices: devices).line
    }

    /// A status message: the hub's (lists cut to `listLimit` entries), the publisher's counters,
    /// whatever the status providers add, and with `devices` the other devices heard. The metrics
    /// endpoint takes it with `listLimit` 0, which builds no lists.
    func statusMessage(listLimit: Int = TrackStateHub.statusListLimit, devices: Bool = false) -> StatusMessage {
        eventLoop.preconditionInEventLoop()
        var status = hub.statusMessage(listLimit: listLimit)
        status.counters.beaconUpdates = counters.beaconUpdates
        status.counters.statusReused = counters.statusReused
        status.counters.subscribers = subscribers.count
        for provider in statusProviders { provider(&status) }
        if devices {
            let table = nearbyDevices ?? NearbyDeviceTable()
            let report = table.report(at: hub.clock.now())
            status.devices = report.devices
            status.devicesCounters = report.counters
        }
        return status
    }
}
