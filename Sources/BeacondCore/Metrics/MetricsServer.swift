import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import ServiceLifecycle
import Synchronization

/// `beacond run --metrics ADDR:PORT` (`metrics.listen`): `GET /metrics` in the Prometheus text
/// format (docs/metrics.md), served by NIOHTTP1 on a thread of its own, so neither a scrape's
/// rendering nor a slow scraper ever runs on the hub's event loop.
///
/// Bounded: at most `maxConnections` connections, shared fairly per peer (`SmallHTTPConnections`:
/// a connection over the cap whose peer holds the most is closed at once, anyone else's closes the
/// longest-idle connection of the peer holding the most), request headers as NIOHTTP1's decoder
/// bounds them, no request bodies, answers held per connection bounded (`SmallHTTP.bootstrap`), a
/// back-off when descriptors run out, and a connection idle for `idleTimeout` is closed.
package final class MetricsServer: Sendable {
    package enum StartError: Error, CustomStringConvertible {
        case bindFailed(WebKioskAddress, reason: String)

        package var description: String {
            switch self {
            case .bindFailed(let address, let reason):
                "cannot serve metrics on \(address) (metrics.listen, --metrics): \(reason)"
            }
        }
    }

    static let maxConnections = 16
    static let idleTimeout: TimeAmount = .seconds(30)

    let address: WebKioskAddress
    let metrics: DaemonMetrics
    private let status: StatusBoard
    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    private let channel = Mutex<(any Channel)?>(nil)
    let connections: SmallHTTPConnections
    private let shutDown = Mutex(false)

    package init(address: WebKioskAddress, metrics: DaemonMetrics, status: StatusBoard) {
        self.address = address
        self.metrics = metrics
        self.status = status
        connections = SmallHTTPConnections(
            name: "metrics", eventLoop: group.next(), maxConnections: Self.maxConnections,
            logger: Logger(label: "beacond.metrics"))
    }

    /// Binds; a port in use, or an address this machine does not have, fails here.
    package func start() async throws(StartError) {
        do {
            let bound = try await bootstrap().bind(host: address.host, port: address.port).get()
            channel.withLock { $0 = bound }
        } catch {
            try? await group.shutdownGracefully()
            throw .bindFailed(address, reason: Self.reason(error))
        }
    }

    /// The address and port listened on (the port chosen when 0 was asked for).
    package var boundAddress: WebKioskAddress {
        var bound = address
        if let port = channel.withLock({ $0?.localAddress?.port }) { bound.port = port }
        return bound
    }

    /// Closes the listener and every connection; a second call returns at once.
    package func shutdown() async {
        let first = shutDown.withLock { done in
            defer { done = true }
            return !done
        }
        guard first else { return }
        let listener = channel.withLock { $0 }
        try? await listener?.close()
        try? await group.shutdownGracefully()
    }

    private func bootstrap() -> ServerBootstrap {
        let metrics = metrics
        let status = status
        let connections = connections
        return SmallHTTP.bootstrap(group: group, backlog: 32, connections: connections) { channel, connection in
            let sync = channel.pipeline.syncOperations
            try sync.addHandlers(IdleStateHandler(allTimeout: Self.idleTimeout), IdleConnectionCloser())
            try sync.addHandler(
                MetricsHTTPHandler(connection: connection) { loop in metrics.scrape(status: status, on: loop) })
        }
    }

    /// `Address already in use (errno: 98)` → `address already in use`.
    private static func reason(_ error: any Error) -> String {
        if let error = error as? IOError {
            let text = "\(error)"
            if error.errnoCode == 98 { return "the port is already in use (\(text))" }
            if error.errnoCode == 99 { return "this machine has no such address (\(text))" }
            if error.errnoCode == 13 { return "permission denied: ports below 1024 need privileges (\(text))" }
            return text
        }
        return "\(error)"
    }
}

/// The metrics endpoint as a service of the daemon's group: started listening before the group
/// runs (a port in use stops the daemon before any source starts); on graceful shutdown it closes.
struct MetricsServerService: Service {
    let server: MetricsServer

    func run() async throws {
        try? await gracefulShutdown()
        await server.shutdown()
    }
}
