import CircuitState
import Glibc
import Logging
import NIOCore
import Synchronization

/// Publishes this node's state, status and beacon sightings to an MQTT broker (docs/mqtt.md), off the
/// kiosk's critical path: the hub's loop makes a payload and drops it into `MqttOutbox` (a lock held
/// for a copy, never for I/O) and wakes `MosquittoClient`'s network thread, which hands it to
/// libmosquitto and writes it. The broker being down, slow or refusing us changes nothing on the loop.
// @unchecked Sendable: its vars are the hub loop's; the network thread reaches it only through the Mutex'd outbox.
package final class MqttPublisher: HubOutput, @unchecked Sendable {
    package let topics: MqttTopics
    package let url: MqttURL
    let qosState: Int32
    package let outbox: MqttOutbox
    /// A storm of state changes goes to the broker in batches at most this often (µs); a change after
    /// a quiet spell goes at once.
    static let batchInterval: Int64 = 10_000
    /// The latest state is published again this often (µs), with a new `sent`: a forged or stale
    /// retained copy on the broker lives at most this long, and `beacond venue` calls a state not
    /// sent again within 1.5 times this stale (`VenueTable.staleAfter`).
    package static let republishInterval: Int64 = 30_000_000
    /// This process's run id (`MqttPayload.newRunID`), in every state payload.
    package let run = MqttPayload.newRunID()
    private let client: MosquittoClient
    private let logger: Logger
    /// The connection's state, read without the outbox's lock (sightings skip their rendering while
    /// the broker is away).
    private final class ConnectedFlag: Sendable {
        let value = Atomic<Bool>(false)
    }

    private let isConnected = ConnectedFlag()

    // The hub's loop only:
    /// Sightings, at most one per beacon a second (`KeyedCoalescer`), each the latest report.
    private let sightings: KeyedCoalescer<OverrideKey, BeaconReport>
    /// The last published state.
    private var lastState: StateMessage?
    private var raceControl: RaceControlPart?
    /// The node's own transmitter, when it has one (`transmitterChanged`).
    private var transmitter: BeaconStatus?
    private let eventLoop: any EventLoop

    /// `eventLoop` is the hub's, on which it receives the hub's events.
    package init(settings: DaemonConfiguration.Mqtt, eventLoop: any EventLoop, logger: Logger) throws {
        guard let text = settings.url else { throw MosquittoClient.SetupError(description: "mqtt: no url") }
        let url: MqttURL
        do throws(MqttURL.Problem) {
            url = try MqttURL(parsing: text)
        } catch {
            throw MosquittoClient.SetupError(description: "mqtt.url: \(error.reason)")
        }
        self.url = url
        self.eventLoop = eventLoop
        let node = settings.resolvedNode
        topics = MqttTopics(prefix: settings.topicPrefix, node: node)
        qosState = Int32(settings.qosState)
        self.logger = logger
        var options = MosquittoClient.Options(url: url, clientID: settings.resolvedClientID)
        options.pumpInterval = Self.batchInterval
        options.periodicInterval = Self.republishInterval
        options.username = settings.username
        if let file = settings.passwordFile { options.password = try MosquittoClient.Options.readPassword(file) }
        options.caFile = settings.caFile
        options.will = MosquittoClient.Message(topic: topics.status, payload: MqttPayload.offline, qos: 1, retain: true)
        options.farewell = options.will
        var state = MqttOutboxState()
        state.setIdentity(url: url.description, node: node)
        let outbox = MqttOutbox(state)
        self.outbox = outbox
        var handlers = MosquittoClient.Handlers()
        let topics = topics
        let isConnected = isConnected
        let qos = qosState
        handlers.connected = { client in
            client.publish(topic: topics.status, payload: MqttPayload.online, qos: 1, retain: true)
            isConnected.value.store(true, ordering: .releasing)
            outbox.update { $0.connected() }
            logger.info("mqtt: connected to \(url) as node \(topics.node)")
        }
        handlers.failed = { reason, repeated in
            isConnected.value.store(false, ordering: .releasing)
            outbox.update { $0.disconnected(reason: reason) }
            // A broker away or a refused login is logged once, not at every retry.
            if repeated {
                logger.debug("mqtt: \(reason); retrying")
            } else {
                logger.warning("mqtt: \(reason); retrying with backoff, the kiosk display is unaffected")
            }
        }
        handlers.published = { outbox.update { $0.completed() } }
        handlers.pump = { client in
            Self.publish(outbox.take(), with: client, topics: topics, qos: qos, outbox: outbox)
        }
        handlers.periodic = { client in Self.republish(with: client, topics: topics, qos: qos, outbox: outbox) }
        let client = try MosquittoClient(options: options, handlers: handlers)
        self.client = client
        outbox.setWake { client.wake() }
        sightings = KeyedCoalescer(eventLoop: eventLoop, interval: .seconds(1)) { key, report, _ in
            Self.sendSighting(report, of: key, topics: topics, outbox: outbox, isConnected: isConnected)
        }
    }

    // MARK: The hub's events (on its loop)

    /// Every beacon heard becomes a sighting.
    package var wantsBeaconUpdates: Bool { true }

    package func receive(_ event: HubEvent) {
        switch event {
        case .published(let publication):
            lastState = publication.message
            if let snapshot = publication.state.remote?.snapshot { raceControl = RaceControlPart(snapshot) }
            offerState()
        case .remoteFetched(let snapshot):
            let part = RaceControlPart(snapshot)
            guard part != raceControl else { return }
            raceControl = part
            offerState()
        case .beaconUpdate(let update):
            if sightings.offer(update.report, for: update.key) == .refused { outbox.update { $0.dropSighting() } }
        }
    }

    /// The node's transmitter changed (from any thread): its status goes into the state payload.
    package func transmitterChanged(_ status: BeaconStatus) {
        eventLoop.execute { [self] in
            transmitter = status
            offerState()
        }
    }

    private func offerState() {
        guard let lastState else { return }
        let payload = MqttPayload.state(
            lastState, node: topics.node, run: run, raceControl: raceControl, transmitter: transmitter)
        outbox.update { $0.offer(state: payload) }
    }

    private static func sendSighting(
        _ report: BeaconReport, of key: OverrideKey, topics: MqttTopics, outbox: MqttOutbox,
        isConnected: ConnectedFlag
    ) {
        guard isConnected.value.load(ordering: .acquiring) else {
            outbox.update { $0.dropSighting() }
            return
        }
        let message = BeaconMessage(time: WallTime(micros: MonotonicClock.wallMicros()), beacon: report)
        let sighting = MqttOutboxState.Sighting(
            topic: topics.beacon(key), payload: MqttPayload.sighting(message, node: topics.node))
        outbox.update { $0.offer(sighting: sighting) }
    }

    // MARK: The network thread

    /// `pump`: hands what the hub's loop dropped off to libmosquitto, which writes it at once (corked).
    static func publish(
        _ work: MqttOutboxState.Work, with client: MosquittoClient, topics: MqttTopics, qos: Int32, outbox: MqttOutbox
    ) -> Bool {
        guard !work.isEmpty else { return false }
        var states = 0
        for state in work.states {
            let stamped = MqttPayload.stamped(state, sentMicros: MonotonicClock.wallMicros())
            if client.publish(topic: topics.state, payload: stamped, qos: qos, retain: true) { states += 1 }
        }
        var sightings = 0
        for sighting in work.sightings
        where client.publish(topic: sighting.topic, payload: sighting.payload, qos: 0, retain: false) {
            sightings += 1
        }
        outbox.update {
            $0.handedOver(states: states, sightings: sightings)
            $0.requeueLatestState(refused: work.states.count - states)
        }
        return true
    }

    /// `periodic`: the latest state again, with a new `sent`.
    static func republish(with client: MosquittoClient, topics: MqttTopics, qos: Int32, outbox: MqttOutbox) {
        guard let state = outbox.update({ $0.takeRepublish() }) else { return }
        let stamped = MqttPayload.stamped(state, sentMicros: MonotonicClock.wallMicros())
        if !client.publish(topic: topics.state, payload: stamped, qos: qos, retain: true) {
            outbox.update { $0.republishRefused() }
        }
    }

    package func start() throws { try client.start() }

    /// A graceful stop: `offline` is published (retained) and the client disconnects cleanly. If the
    /// broker does not take it within a second, the dropped connection makes it send the last will,
    /// which says the same. A connection attempt still hanging (a broker that drops packets) is not
    /// waited for beyond 3 s: the daemon's shutdown goes on.
    package func stop() {
        guard client.stop() else {
            logger.warning("mqtt: a connection attempt to \(url) is still in progress; not waiting for it")
            return
        }
    }
}
