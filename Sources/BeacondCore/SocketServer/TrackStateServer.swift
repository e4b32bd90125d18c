import Glibc
import Logging
import NIOCore
import NIOPosix

/// The Unix socket server of protocol v1 (docs/protocol.md): accepts clients on the hub's event
/// loop, greets them with hello and the current state, answers their commands, and fans the
/// publisher's state and beacon lines out to them through bounded per-client queues.
///
/// Everything it does runs on the hub's event loop, so the publisher and the hub are called from
/// one thread only.
/// `start()` and `shutdown()` may be called from any thread.
// @unchecked Sendable: its state is confined to the hub's event loop; start() and shutdown() hop there.
package final class TrackStateServer: @unchecked Sendable {
    package static let defaultPath = TrackStateClient.defaultPath
    static let defaultMaxClients = 1024
    /// Mode of the socket file: owner and group may connect.
    static let socketMode: mode_t = 0o660
    /// Pending connections the kernel queues (capped by net.core.somaxconn).
    static let listenBacklog: Int32 = 4096

    let publisher: TrackStatePublisher
    /// Answers the clients' status requests; the server adds its own part and the publisher's.
    let status: StatusBoard
    var eventLoop: EventLoop { publisher.eventLoop }
    let path: String
    /// `max_clients` as configured.
    let maxClients: Int
    /// The clients served at once: `max_clients`, or fewer when the open-file limit leaves no room
    /// for that many (`clientCap(maxClients:descriptorLimit:openDescriptors:)`). Set by `start()`.
    private(set) var clientCap: Int
    /// A listening socket handed over by systemd (socket activation): used as is, never unlinked.
    let inheritedDescriptor: CInt?
    let limits: ClientLimits
    let logger: Logger

    private enum Phase {
        case idle, starting, running, stopping, stopped
    }

    // Confined to eventLoop.
    private var phase = Phase.idle
    /// The listening socket and the thread that accepts on it, while running.
    var listener: (descriptor: CInt, acceptLoop: SocketAcceptLoop, ended: EventLoopFuture<Void>)?
    private(set) var roster = ClientRoster()
    private var nextClientID = 0
    /// Hands memory back a second after clients leave.
    private lazy var memoryTrim = MemoryTrimmer(eventLoop: eventLoop)
    private var boundFile: UnixSocketPath.FileIdentity?
    /// The server's counters (read on the hub's event loop).
    package let counters = ServerCounters()
    let logLimiter: LogRateLimiter

    package init(
        publisher: TrackStatePublisher, status: StatusBoard, path: String = TrackStateServer.defaultPath,
        maxClients: Int = TrackStateServer.defaultMaxClients, inheritedDescriptor: CInt? = nil,
        limits: ClientLimits = ClientLimits(), logger: Logger = Logger(label: "beacond.socket"),
        logLimiter: LogRateLimiter = LogRateLimiter()
    ) {
        self.publisher = publisher
        self.status = status
        self.logLimiter = logLimiter
        self.path = path
        self.maxClients = max(0, maxClients)
        clientCap = self.maxClients
        self.inheritedDescriptor = inheritedDescriptor
        self.limits = limits
        self.logger = logger
    }

    // MARK: Start

    /// Binds the socket (or adopts the inherited one) and starts accepting clients. Raises
    /// RLIMIT_NOFILE first. Fails with a `TrackStateServerError`.
    package func start() -> EventLoopFuture<Void> {
        let loop = eventLoop
        return loop.flatSubmit { () -> EventLoopFuture<Void> in
            guard self.phase == .idle else { return loop.makeFailedFuture(TrackStateServerError.alreadyStarted) }
            self.phase = .starting
            let descriptorLimit = Self.raiseOpenFileLimit()
            self.clientCap = Self.clientCap(
                maxClients: self.maxClients, descriptorLimit: descriptorLimit,
                openDescriptors: Self.openDescriptorCount())
            if self.clientCap < self.maxClients {
                self.logger.warning(
                    """
                    max_clients \(self.maxClients) lowered to \(self.clientCap): the open-file limit \
                    \(descriptorLimit) leaves room for that many clients at 2 descriptors each, beside the \
                    daemon's open files and those kept for its own use (raise LimitNOFILE= to serve more)
                    """)
            }
            let descriptor: CInt
            if let inherited = self.inheritedDescriptor {
                descriptor = inherited
            } else {
                do {
                    try self.prepareSocketPath()
                    descriptor = try self.bindSocket()
                } catch {
                    self.phase = .idle
                    return loop.makeFailedFuture(error)
                }
            }
            if self.inheritedDescriptor != nil {
                // systemd listened with the unit's Backlog=; ours is for connection storms.
                _ = listen(descriptor, Self.listenBacklog)
            }
            do {
                try self.listening(on: descriptor)
                return loop.makeSucceededVoidFuture()
            } catch {
                self.phase = .idle
                return loop.makeFailedFuture(error)
            }
        }
    }

    /// Binds our own socket file. (SwiftNIO's `bind(unixDomainSocketPath:)` stops at 103 bytes,
    /// the macOS limit; Linux allows 107.)
    private func bindSocket() throws(TrackStateServerError) -> CInt {
        do {
            return try UnixSocketPath(path).bindListening(backlog: Self.listenBacklog)
        } catch {
            switch error {
            case .invalid: throw .invalidPath(error)
            case .failed(_, _, let code) where code == ENOENT || code == EACCES:
                throw .directoryUnusable(path: path, code: code)
            case .failed(_, _, let code): throw .bindFailed(path: path, reason: errnoText(code))
            }
        }
    }

    /// The bootstrap that hands an accepted connection of user `uid` to NIO, which owns its
    /// descriptor from then on.
    func bootstrap(uid: UInt32, descriptor: CInt) -> ClientBootstrap {
        ClientBootstrap(group: eventLoop)
            .channelOption(ChannelOptions.writeBufferWaterMark, value: limits.waterMark)
            // Clients send a few short commands: small reads bound what one read can ask for.
            .channelOption(
                ChannelOptions.recvAllocator,
                value: AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 1024, maximum: 16 * 1024)
            )
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try self.initialize(channel, uid: uid, descriptor: descriptor)
                }
            }
    }

    /// Refuses to start over a live daemon; removes a stale socket file.
    private func prepareSocketPath() throws(TrackStateServerError) {
        let socketPath = UnixSocketPath(path)
        do { try socketPath.validate() } catch { throw .invalidPath(error) }
        switch socketPath.probe() {
        case .absent:
            return
        case .live:
            throw .alreadyRunning(path: path)
        case .notASocket:
            throw .notASocket(path: path)
        case .failed(let code):
            throw .cannotReplace(path: path, reason: errnoText(code))
        case .stale:
            guard socketPath.unlink() else {
                throw .cannotReplace(path: path, reason: errnoText(errno))
            }
            logger.notice("removed stale socket \(path)")
        }
    }

    /// Sets the socket file's mode and starts accepting on `descriptor` (`SocketAcceptLoop`).
    private func listening(on descriptor: CInt) throws(TrackStateServerError) {
        if inheritedDescriptor == nil {
            guard chmod(path, Self.socketMode) == 0 else {
                let reason = errnoText(errno)
                _ = Glibc.close(descriptor)
                UnixSocketPath(path).unlink()
                throw .chmodFailed(path: path, reason: reason)
            }
            boundFile = UnixSocketPath(path).identity()
        }
        do {
            try startAccepting(on: descriptor)
        } catch {
            _ = Glibc.close(descriptor)
            if inheritedDescriptor == nil { UnixSocketPath(path).unlink() }
            throw .bindFailed(path: path, reason: errnoText(error.errno))
        }
        phase = .running
        status.add(publisher)
        status.add(self)
        let how = inheritedDescriptor.map { "inherited fd \($0)" } ?? "mode 0660"
        logger.info("listening on \(path) (\(how), max_clients \(clientCap))")
    }

    // MARK: Clients

    /// Sets up an accepted connection (`descriptor`, now NIO's) of user `uid`: a session, or a
    /// refusal when the server is full and `uid` holds as many connections as any other user (see
    /// `ClientRoster`).
    private func initialize(_ channel: Channel, uid: UInt32, descriptor: CInt) throws {
        let pipeline = channel.pipeline.syncOperations
        guard phase == .running else {
            try pipeline.addHandler(RefusingHandler(line: ByeMessage(reason: "shutting down").line))
            return
        }
        if roster.count >= clientCap {
            guard let victim = roster.fairShareVictim(for: uid) else {
                counters.rejectedClients += 1
                if counters.rejectedClients == 1 || counters.rejectedClients % 100 == 0 {
                    logger.limited(
                        limiter: logLimiter, .warning, "client.refused",
                        """
                        refused a client: \(clientCap) clients connected (\(counters.rejectedClients) refused so far)
                        """)
                }
                let message = "server full: \(clientCap) clients connected (max_clients)"
                try pipeline.addHandler(RefusingHandler(line: ErrorMessage(message).line))
                return
            }
            evict(victim, admitting: uid)
        }
        nextClientID += 1
        let id = nextClientID
        var clientLogger = logger
        clientLogger[metadataKey: "client"] = "\(id)"
        let outbound = OutboundQueueHandler(
            limits: limits, counters: counters, logger: clientLogger, logLimiter: logLimiter,
            directWrites: limits.directWrites ? DirectWriteDescriptor(duplicating: descriptor) : nil)
        let session = ClientSession(
            id: id, uid: uid, publisher: publisher, status: status, outbound: outbound, limits: limits,
            counters: counters,
            logger: clientLogger, logLimiter: logLimiter)
        roster.add(session)
        counters.accepted += 1
        counters.clients = roster.count
        channel.closeFuture.assumeIsolated().whenComplete { _ in
            self.roster.remove(id: id)
            self.counters.clients = self.roster.count
            self.memoryTrim.schedule()
        }
        try pipeline.addHandler(BackPressureHandler())
        try pipeline.addHandler(outbound)
        try pipeline.addHandler(ByteToMessageHandler(LineFrameDecoder(maxLength: limits.maxLineLength)))
        try pipeline.addHandler(CommandDecoder(maxLineLength: limits.maxLineLength))
        try pipeline.addHandler(RequestPacingHandler(counters: counters))
        try pipeline.addHandler(session)
    }

    /// Closes `victim` (with a `bye` saying why) to make room for a client of user `uid`.
    private func evict(_ victim: ClientSession, admitting uid: UInt32) {
        let held = roster.connections(of: victim.uid)
        roster.remove(id: victim.id)
        counters.clients = roster.count
        counters.evictedClients += 1
        let idle = Double(limits.clock() &- victim.lastActivity) / 1e9
        if counters.evictedClients == 1 || counters.evictedClients % 100 == 0 {
            logger.notice(
                """
                server full: closed client \(victim.id) of uid \(victim.uid) (\(held) connections, idle \
                \(String(format: "%.1f", idle)) s) to admit uid \(uid) (\(counters.evictedClients) closed so far)
                """)
        }
        let reason =
            "server full: closing the longest-idle connection of the user holding the most connections "
            + "(\(held) of \(clientCap)) to admit another user"
        _ = victim.sayGoodbye(reason: reason)
    }

    /// Clients connected now (on the hub's event loop).
    package var clientCount: Int { roster.count }

    /// Bytes held for all clients now (channel write buffers plus queues; on the hub's event loop).
    var queuedBytes: Int { roster.sessions.values.reduce(0) { $0 + $1.heldBytes } }

    // MARK: Shutdown

    /// Stops accepting, sends `{"type":"bye"}` to every client and closes it (a client that does
    /// not take its bye within `limits.byeTimeout` is closed anyway), then removes the socket file
    /// unless systemd owns it. Completes when all of that is done; calling it again is harmless.
    package func shutdown() -> EventLoopFuture<Void> {
        let loop = eventLoop
        return loop.flatSubmit { () -> EventLoopFuture<Void> in
            switch self.phase {
            case .idle, .starting, .stopped:
                self.phase = .stopped
                return loop.makeSucceededVoidFuture()
            case .stopping, .running:
                break
            }
            self.phase = .stopping
            let listenerClosed = self.stopAccepting()
            let goodbyes = self.roster.sessions.values.compactMap { $0.sayGoodbye(reason: "shutting down") }
            let clientCount = goodbyes.count
            return listenerClosed.and(EventLoopFuture.andAllComplete(goodbyes, on: loop)).map { _ in
                self.removeSocketFile()
                self.phase = .stopped
                self.logger.info("socket closed; said bye to \(clientCount) clients")
            }
        }
    }

    private func removeSocketFile() {
        guard inheritedDescriptor == nil, let boundFile else { return }
        let socketPath = UnixSocketPath(path)
        // Only our own file: another process may have replaced it meanwhile.
        if socketPath.identity() == boundFile { socketPath.unlink() }
        self.boundFile = nil
    }

    // MARK: Helpers

    private static func describe(_ error: Error) -> String {
        if let error = error as? IOError { return errnoText(error.errnoCode) }
        return "\(error)"
    }
}

/// Answers a connection that cannot be served with one line, then closes it.
final class RefusingHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let line: [UInt8]
    private var sent = false

    init(line: [UInt8]) {
        self.line = line
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { refuse(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        refuse(context: context)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        context.close(promise: nil)
    }

    private func refuse(context: ChannelHandlerContext) {
        guard !sent else { return }
        sent = true
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: line))).assumeIsolated().whenComplete { _ in
            channel.close(promise: nil)
        }
    }
}

extension TrackStateServer: StatusContributor {
    package func contribute(to status: inout StatusMessage, for query: StatusQuery) {
        status.server = counters.status(maxClients: clientCap, queuedBytes: queuedBytes)
    }
}
