import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization
import UnixSignals

/// `beacond kiosk --web ADDR:PORT`: the flag in a browser (docs/kiosk-web.md). An HTTP server on
/// one event loop serves the page, the Server-Sent Events stream, `/state` and `/healthz`,
/// bridged from the daemon's socket by a `TrackStateFeed`.
package enum WebKiosk {
    package struct Configuration: Sendable {
        package var address: WebKioskAddress
        /// Listening on a non-loopback address needs this (`--web-allow-remote`).
        package var allowRemote = false
        /// The daemon's socket.
        package var socketPath: String
        /// No evacuation flash (`--steady`).
        package var steady = false
        /// The languages and the exit (`kiosk.*` of `--config`).
        package var presentation = KioskPresentation()
        /// Says each change of flag aloud (`--speak`); nil: silent.
        package var voice: KioskVoice?
        /// The most `/events` streams open at once, shared fairly per peer (`WebKioskHub.register`).
        package var maxClients = 64
        /// The most connections open at once (streams included), shared fairly per peer
        /// (`SmallHTTPConnections`).
        package var maxConnections = 128
        /// A connection with no request and nothing written for this long is closed.
        package var idleTimeout: TimeAmount = .seconds(30)
        /// How often every stream gets the current view even when nothing changed.
        package var refreshInterval: TimeAmount = .seconds(1)
        /// Seconds of silence before the feed pings the daemon, and the daemon's time to answer.
        package var pingInterval = 2.0
        package var replyTimeout = 3.0

        package init(address: WebKioskAddress, socketPath: String) {
            self.address = address
            self.socketPath = socketPath
        }
    }

    package enum StartError: Error, CustomStringConvertible {
        /// A non-loopback address without `allowRemote`: bad usage (exit 64).
        case remoteNotAllowed(WebKioskAddress)
        case bindFailed(WebKioskAddress, reason: String)
        case feedFailed(reason: String)

        package var description: String {
            switch self {
            case .remoteNotAllowed(let address):
                "\(address) is not a loopback address: the kiosk page would be reachable from the network; "
                    + "pass --web-allow-remote to listen there anyway, or use 127.0.0.1, [::1] or localhost"
            case .bindFailed(let address, let reason): "cannot listen on \(address): \(reason)"
            case .feedFailed(let reason): "cannot start the daemon feed: \(reason)"
            }
        }
    }

    /// Serves until the process ends; `announce` gets the URL once listening.
    package static func run(
        configuration: Configuration, announce: @Sendable (String) -> Void = { _ in }
    ) async throws {
        // `beacond kiosk` blocks SIGTERM and SIGINT in every thread (`DaemonSignals`): they are
        // read here, and end the server cleanly.
        let quit = await UnixSignalsSequence(trapping: .sigterm, .sigint)
        let server = try WebKioskServer(configuration: configuration)
        try await server.start()
        announce("http://\(server.boundAddress)/")
        let watcher = Task {
            for await _ in quit {
                await server.shutdown()
                return
            }
        }
        try? await server.closeFuture.get()
        watcher.cancel()
        await server.shutdown()
    }
}

/// The server itself: started, then running until `shutdown()`.
package final class WebKioskServer: Sendable {
    let configuration: WebKiosk.Configuration
    let group: MultiThreadedEventLoopGroup
    let hub: WebKioskHub
    let connections: SmallHTTPConnections
    private let feed: TrackStateFeed
    private let channelBox = Mutex<(any Channel)?>(nil)
    /// Set by the first shutdown: a second one returns at once (its loop is gone, and a task
    /// submitted to a loop that has shut down never completes).
    private let shutDown = Mutex(false)

    package init(configuration: WebKiosk.Configuration) throws(WebKiosk.StartError) {
        guard configuration.address.isLoopback || configuration.allowRemote else {
            throw .remoteNotAllowed(configuration.address)
        }
        self.configuration = configuration
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let hub = WebKioskHub(
            eventLoop: group.next(), maxStreams: configuration.maxClients, steady: configuration.steady,
            socketPath: configuration.socketPath, presentation: configuration.presentation, voice: configuration.voice,
            refreshInterval: configuration.refreshInterval)
        self.hub = hub
        connections = SmallHTTPConnections(
            name: "web kiosk", eventLoop: hub.eventLoop, maxConnections: configuration.maxConnections,
            logger: Logger(label: "beacond.kiosk"))
        var feedConfiguration = TrackStateFeed.Configuration(path: configuration.socketPath)
        feedConfiguration.pingInterval = configuration.pingInterval
        feedConfiguration.replyTimeout = configuration.replyTimeout
        let loop = hub.eventLoop
        feed = TrackStateFeed(configuration: feedConfiguration) { event in
            loop.execute { hub.apply(event) }
        }
    }

    /// Binds, starts the refresh ticks and the daemon feed.
    package func start() async throws {
        let channel: any Channel
        do {
            let address = configuration.address
            channel = try await bootstrap().bind(host: address.host, port: address.port).get()
        } catch {
            try? await group.shutdownGracefully()
            throw WebKiosk.StartError.bindFailed(configuration.address, reason: "\(error)")
        }
        let hub = self.hub
        try await hub.eventLoop.submit { hub.start() }.get()
        try started(channel)
    }

    /// `start()` for callers outside Swift concurrency (the tests).
    @available(*, noasync)
    package func startBlocking() throws {
        let channel: any Channel
        do {
            channel = try bootstrap().bind(host: configuration.address.host, port: configuration.address.port).wait()
        } catch {
            try? group.syncShutdownGracefully()
            throw WebKiosk.StartError.bindFailed(configuration.address, reason: "\(error)")
        }
        let hub = self.hub
        try hub.eventLoop.submit { hub.start() }.wait()
        try started(channel)
    }

    private func started(_ channel: any Channel) throws(WebKiosk.StartError) {
        channelBox.withLock { $0 = channel }
        do {
            try feed.start()
        } catch {
            throw .feedFailed(reason: "\(error)")
        }
    }

    private func bootstrap() -> ServerBootstrap {
        let hub = self.hub
        let connections = self.connections
        let idle = configuration.idleTimeout
        return SmallHTTP.bootstrap(group: group, backlog: 128, connections: connections) { channel, connection in
            let sync = channel.pipeline.syncOperations
            try sync.addHandlers(IdleStateHandler(allTimeout: idle), IdleConnectionCloser())
            try sync.addHandler(WebKioskHTTPHandler(hub: hub, connection: connection))
        }
    }

    /// The address and port listened on (the port chosen when 0 was asked for).
    package var boundAddress: WebKioskAddress {
        var address = configuration.address
        if let port = channelBox.withLock({ $0?.localAddress?.port }) { address.port = port }
        return address
    }

    package var closeFuture: EventLoopFuture<Void> {
        channelBox.withLock { $0?.closeFuture } ?? group.next().makeSucceededVoidFuture()
    }

    /// Stops the feed and the server, closing every connection.
    @available(*, noasync)
    package func shutdownBlocking() {
        guard claimShutdown() else { return }
        feed.stop()
        let channel = channelBox.withLock { $0 }
        try? channel?.close().wait()
        let hub = self.hub
        try? hub.eventLoop.submit { hub.stop() }.wait()
        try? group.syncShutdownGracefully()
    }

    /// Stops the feed and the server, closing every connection.
    package func shutdown() async {
        guard claimShutdown() else { return }
        feed.stop()
        let channel = channelBox.withLock { $0 }
        try? await channel?.close()
        let hub = self.hub
        try? await hub.eventLoop.submit { hub.stop() }.get()
        try? await group.shutdownGracefully()
    }

    /// True for the first caller only.
    private func claimShutdown() -> Bool {
        shutDown.withLock { done in
            defer { done = true }
            return !done
        }
    }
}
