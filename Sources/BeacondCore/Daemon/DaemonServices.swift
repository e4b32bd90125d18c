import Logging
import NIOCore
import ServiceLifecycle

/// The socket server as a service of the daemon's group: it listens when the group starts it,
/// and on graceful shutdown (which comes after the sources and the hub have stopped: the group
/// stops its services in reverse order) tells every client `bye` and removes the socket file,
/// unless systemd owns it.
struct TrackStateServerService: Service {
    let server: TrackStateServer
    let listening: @Sendable () -> Void
    let logger: Logger

    func run() async throws {
        do {
            try await server.start().get()
        } catch {
            throw DaemonStartError(description: "\(error)")
        }
        listening()
        try? await gracefulShutdown()
        logger.info("shutting down")
        try? await server.shutdown().get()
    }
}

/// The hub as a service: started before the sources (so the first evaluation and its timers are
/// in place), and on graceful shutdown, once the sources have stopped, it publishes the state as
/// of now (an override that expired meanwhile is not left standing) and cancels its timers. Its
/// event loop outlives the group; the daemon shuts that down last.
struct TrackStateHubService: Service {
    let hub: TrackStateHub

    func run() async throws {
        let hub = hub
        try await hub.eventLoop.submit { hub.start() }.get()
        try? await gracefulShutdown()
        try? await hub.eventLoop.submit {
            hub.publishDueChanges()
            hub.stop()
        }.get()
    }
}
