import CircuitState
import Glibc
import Logging
import NIOCore
import Synchronization

/// Publishes this node's state, status and beacon sightings to an MQTT broker (docs/mqtt.md), off the
/// kiosk's critical path: the hub's loop renders a payload and drops it into `MqttOutbox` (a lock held
/// for a copy, never for I/O); a sender thread hands it to libmosquitto; libmosquitto's network runs on
/// `MosquittoClient`'s thread. The broker being down, slow or refusing us changes nothing on the loop.
package final class MqttPublisher: @unchecked Sendable {
    package let topics: MqttTopics
    package let url: MqttURL
    let qosState: Int32
    package let outbox: MqttOutbox
    private let client: MosquittoClient
    private let logger: Logger
    private var sender: PosixThread?
    /// Read without the outbox's lock, from any thread.
    private final class Flags: Sendable {
        /// Publishes libmosquitto completed (written, or acknowledged), for the graceful stop's wait.
        let completed = Atomic<Int>(0)
        /// The connection's state (sightings skip their rendering while the broker is away).
        let isConnected = Atomic<Bool>(false)
    }

    private let flags = Flags()

    // The hub's loop only:
    private var coalescer = SightingCoalescer()
    private var lastMessage: StateMessage?
    private var raceControl: RaceControlPart?

    package init(settings: DaemonConfiguration.Mqtt, logger: Logger) throws {
        guard let text = settings.url else { throw MosquittoClient.SetupError(description: "mqtt: no url") }
        let url: MqttURL
        do throws(MqttURL.Problem) {
            url = try MqttURL(parsing: text)
        } catch {
            throw MosquittoClient.SetupError(description: "mqtt.url: \(error.reason)")
        }
        self.url = url
        let node = settings.resolvedNode
        topics = MqttTopics(prefix: settings.topicPrefix, node: node)
        qosState = Int32(settings.qosState)
        self.logger = logger
        var options = MosquittoClient.Options(url: url, clientID: settings.resolvedClientID)
        options.username = settings.username
        if let file = settings.passwordFile { options.password = try Self.readPassword(file) }
        options.caFile = settings.caFile
        options.will = (topics.status, MqttPayload.offline, 1, true)
        var state = MqttOutboxState()
        state.setIdentity(url: url.description, node: node)
        let outbox = MqttOutbox(state)
        self.outbox = outbox
        var handlers = MosquittoClient.Handlers()
        let topics = topics
        let flags = flags
        handlers.connected = { client in
            client.publish(topic: topics.status, payload: MqttPayload.online, qos: 1, retain: true)
            flags.isConnected.store(true, ordering: .releasing)
            outbox.update { $0.connected() }
            logger.info("mqtt: connected to \(url) as node \(topics.node)")
        }
        handlers.failed = { reason, repeated in
            flags.isConnected.store(false, ordering: .releasing)
            outbox.update { $0.disconnected(reason: reason) }
            // A broker away or a refused login is logged once, not at every retry.
            if repeated {
                logger.debug("mqtt: \(reason); retrying")
            } else {
                logger.warning("mqtt: \(reason); retrying with backoff, the kiosk display is unaffected")
            }
        }
        handlers.published = {
            flags.completed.add(1, ordering: .relaxed)
            outbox.update { $0.completed() }
        }
        client = try MosquittoClient(options: options, handlers: handlers)
    }

    /// `mqtt.password_file`: its first line.
    static func readPassword(_ path: String) throws -> String {
        let bytes: [UInt8]
        do {
            bytes = try readRegularFile(path, maxBytes: 4096)
        } catch {
            throw MosquittoClient.SetupError(description: "mqtt.password_file: \(error)")
        }
        let line = bytes.prefix { $0 != 0x0A && $0 != 0x0D }
        return String(decoding: line, as: UTF8.self)
    }

    // MARK: Hub hooks (before the hub starts; they run on its loop)

    /// Hears the hub's publications, sightings and remote fetches. Call after the socket publisher
    /// was created, so the kiosk's line goes out before any MQTT work.
    package func attach(to hub: TrackStateHub) {
        hub.addPublicationObserver { [self] publication in
            lastMessage = publication.message
            if let snapshot = publication.state.remote?.snapshot { raceControl = RaceControlPart(snapshot) }
            offerState()
        }
        hub.addRemoteObserver { [self] snapshot in
            let part = RaceControlPart(snapshot)
            guard part != raceControl else { return }
            raceControl = part
            offerState()
        }
        let loop = hub.eventLoop
        hub.addSightingObserver { [weak hub, self] key, time in
            guard let hub else { return }
            sighted(key, at: time, hub: hub, loop: loop)
        }
    }

    private func offerState() {
        guard let lastMessage else { return }
        let payload = MqttPayload.state(lastMessage, node: topics.node, raceControl: raceControl)
        outbox.update { $0.offer(state: payload) }
    }

    private func sighted(_ key: OverrideKey, at time: Int64, hub: TrackStateHub, loop: EventLoop) {
        let now = Int64(loop.now.uptimeNanoseconds / 1000)
        switch coalescer.offer(key, at: now) {
        case .sendNow:
            sendSighting(key, at: time, hub: hub)
        case .scheduled(let delay):
            loop.scheduleTask(in: .microseconds(delay)) { [weak hub, self] in
                guard let hub, coalescer.takePending(key, at: Int64(loop.now.uptimeNanoseconds / 1000)) else { return }
                sendSighting(key, at: nil, hub: hub)
            }
        case .alreadyPending:
            break
        case .tableFull:
            outbox.update { $0.dropSighting() }
        }
    }

    private func sendSighting(_ key: OverrideKey, at time: Int64?, hub: TrackStateHub) {
        guard flags.isConnected.load(ordering: .acquiring) else {
            outbox.update { $0.dropSighting() }
            return
        }
        guard let beacon = hub.beaconReport(for: key, at: time) else { return }
        let message = BeaconMessage(time: WallTime(micros: MonotonicClock.wallMicros()), beacon: beacon)
        let sighting = MqttOutboxState.Sighting(
            topic: topics.beacon(key), payload: MqttPayload.sighting(message, node: topics.node))
        outbox.update { $0.offer(sighting: sighting) }
    }

    // MARK: Threads

    package func start() throws {
        let client = client
        let outbox = outbox
        let qos = qosState
        let topics = topics
        sender = try PosixThread.start(detached: false) {
            while let work = outbox.nextWork() {
                var states = 0
                if let state = work.state,
                    client.publish(topic: topics.state, payload: state, qos: qos, retain: true)
                {
                    states = 1
                }
                var sightings = 0
                for sighting in work.sightings
                where client.publish(topic: sighting.topic, payload: sighting.payload, qos: 0, retain: false) {
                    sightings += 1
                }
                outbox.update {
                    $0.handedOver(states: states, sightings: sightings)
                    if work.state != nil, states == 0 { $0.requeue(state: work.state) }
                }
            }
        }
        try client.start()
    }

    /// A graceful stop: `offline` is published (retained) and the client disconnects cleanly. If the
    /// broker does not take it within a second, the dropped connection makes it send the last will,
    /// which says the same.
    package func stop() {
        outbox.stop()
        sender?.join()
        if flags.isConnected.load(ordering: .acquiring) {
            let before = flags.completed.load(ordering: .relaxed)
            client.publish(topic: topics.status, payload: MqttPayload.offline, qos: 1, retain: true)
            var waited: Int64 = 0
            while flags.completed.load(ordering: .relaxed) == before, waited < 1_000_000 {
                usleep(10_000)
                waited += 10_000
            }
        }
        client.stop()
    }
}
