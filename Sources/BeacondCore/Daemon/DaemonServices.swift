import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// The socket server as a service of the daemon's group. The daemon starts it listening before
/// the group runs, so a second daemon on the same socket fails before its scanner touches the
/// adapter; on graceful shutdown (which comes after the sources and the hub have stopped: the
/// group stops its services in reverse order) it tells every client `bye` and removes the
/// socket file, unless systemd owns it.
struct TrackStateServerService: Service {
    let server: TrackStateServer
    let logger: Logger

    func run() async throws {
        try? await gracefulShutdown()
        logger.info("shutting down")
        try? await server.shutdown().get()
    }
}

/// The hub as a service. The daemon starts it (its first evaluation and its timers) before the
/// group runs; on graceful shutdown, once the sources have stopped, it publishes the state as of
/// now (an override that expired meanwhile is not left standing) and cancels its timers. Its
/// event loop outlives the group; the daemon shuts that down last.
struct TrackStateHubService: Service {
    let hub: TrackStateHub

    func run() async throws {
        let hub = hub
        try? await gracefulShutdown()
        try? await hub.eventLoop.submit {
            hub.publishDueChanges()
            hub.stop()
        }.get()
    }
}

/// The MQTT publisher as a service: started by the daemon; on graceful shutdown (after the sources
/// and the hub, which published the last state) it publishes `offline` and disconnects cleanly.
struct MqttPublisherService: Service {
    let publisher: MqttPublisher

    func run() async throws {
        try? await gracefulShutdown()
        let publisher = publisher
        await Task.detached { publisher.stop() }.value
    }
}

/// Tells systemd `STOPPING=1` as a graceful shutdown begins: the last service of the group, so
/// the first the group tells (it stops its services in reverse order). Sent once, whichever
/// comes first: this, or the daemon's end after an error.
final class SystemdStoppingService: Service, Sendable {
    private let notifier: SystemdNotifier
    private let sent = Atomic<Bool>(false)

    init(notifier: SystemdNotifier) {
        self.notifier = notifier
    }

    func run() async throws {
        try? await gracefulShutdown()
        sendOnce()
    }

    func sendOnce() {
        guard !sent.exchange(true, ordering: .relaxed) else { return }
        _ = notifier.stopping()
    }
}
