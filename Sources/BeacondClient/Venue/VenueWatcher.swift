import Glibc
import Synchronization

/// `beacond venue`'s connection: subscribes to every node's state and status under the prefix and
/// keeps a `VenueTable` of what arrives (on libmosquitto's thread, behind a lock). It speaks MQTT 5 and
/// asks the broker for no packet over `maxPacketSize`, so a huge retained message is dropped by the
/// broker rather than read; a payload over the table's cap that arrives anyway is not copied.
package final class VenueWatcher: Sendable {
    /// A state is a few KiB (`VenueTable.maxStatePayload` 16 KiB); the packet adds the topic.
    package static let maxPacketSize: UInt32 = 65_536

    package struct Settings: Sendable {
        package var url: MqttURL
        package var prefix = MqttTopics.defaultPrefix
        package var clientID: String
        package var username: String?
        package var passwordFile: String?
        package var caFile: String?

        package init(url: MqttURL, clientID: String) {
            self.url = url
            self.clientID = clientID
        }
    }

    private struct Shared: ~Copyable {
        var table: VenueTable
        var subscribed = false
        /// Monotonic microseconds of the last message, or of the subscription.
        var lastActivity: Int64 = 0
        var messages = 0
        var lastFailure: String?
    }

    private final class SharedBox: Sendable {
        let mutex: Mutex<Shared>
        init(_ value: consuming Shared) { mutex = Mutex(value) }
    }

    private let box: SharedBox
    private let client: MosquittoClient
    /// Signalled on every subscription, message and failure: `waitForSnapshot` waits on it.
    private let activity: WakeSignal

    package init(settings: Settings) throws {
        let box = SharedBox(Shared(table: VenueTable(prefix: settings.prefix)))
        self.box = box
        let activity = try WakeSignal()
        self.activity = activity
        var options = MosquittoClient.Options(url: settings.url, clientID: settings.clientID)
        options.username = settings.username
        if let file = settings.passwordFile { options.password = try MosquittoClient.Options.readPassword(file) }
        options.caFile = settings.caFile
        options.maximumPacketSize = Self.maxPacketSize
        options.maxPayload = VenueTable.maxStatePayload
        var handlers = MosquittoClient.Handlers()
        let filters = MqttTopics.venueFilters(prefix: settings.prefix)
        handlers.connected = { client in
            for filter in filters { client.subscribe(filter, qos: 1) }
            box.mutex.withLock {
                $0.subscribed = true
                $0.lastActivity = MonotonicClock.micros()
                $0.lastFailure = nil
            }
            activity.signal()
        }
        handlers.failed = { reason, _ in
            box.mutex.withLock { $0.lastFailure = reason }
            activity.signal()
        }
        handlers.message = { topic, payload, _ in
            box.mutex.withLock {
                $0.table.receive(topic: topic, payload: payload)
                $0.messages += 1
                $0.lastActivity = MonotonicClock.micros()
            }
            activity.signal()
        }
        handlers.oversize = { topic, size in
            box.mutex.withLock {
                $0.table.receive(topic: topic, oversize: size)
                $0.messages += 1
                $0.lastActivity = MonotonicClock.micros()
            }
            activity.signal()
        }
        client = try MosquittoClient(options: options, handlers: handlers)
    }

    package func start() throws { try client.start() }
    package func stop() { client.stop() }

    package var rows: [VenueTable.Row] { snapshot.rows }

    /// The rows now (this machine's wall clock) and the count of nodes the full table left out.
    package var snapshot: (rows: [VenueTable.Row], leftOut: Int) {
        box.mutex.withLock { ($0.table.rows(now: MonotonicClock.wallMicros()), $0.table.leftOut) }
    }
    package var lastFailure: String? { box.mutex.withLock { $0.lastFailure } }

    /// Waits up to `micros` for a message, a subscription or a failure; true when one came.
    package func waitForActivity(micros: Int64) -> Bool {
        let came = activity.wait(micros: micros)
        if came { activity.drain() }
        return came
    }

    /// For `--once` and `--json`: waits until subscribed and `quiet` µs passed without a message (the
    /// retained ones arrive at once), at most `timeout` µs. Nil when it never connected: the reason.
    package func waitForSnapshot(quiet: Int64 = 500_000, timeout: Int64) -> String? {
        let deadline = MonotonicClock.micros() + timeout
        while true {
            activity.drain()
            let (subscribed, last) = box.mutex.withLock { ($0.subscribed, $0.lastActivity) }
            let now = MonotonicClock.micros()
            if subscribed, now - last >= quiet { return nil }
            guard now < deadline else { break }
            // Until the quiet time is up, or the deadline; any message starts the wait again.
            let until = subscribed ? min(last + quiet, deadline) : deadline
            activity.wait(micros: until - now)
        }
        let (subscribed, failure) = box.mutex.withLock { ($0.subscribed, $0.lastFailure) }
        if subscribed { return nil }
        return failure ?? "no answer from the broker"
    }
}
