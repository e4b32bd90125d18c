import Glibc
import Logging
import NIOCore

/// One connection to a small HTTP listener (the web kiosk, the metrics endpoint): its place in the
/// listener's `SmallHTTPConnections`.
package final class SmallHTTPConnection: FairShareMember {
    package let id: Int
    package let owner: HTTPPeer
    package private(set) var lastActivity: UInt64
    let channel: any Channel

    init(id: Int, owner: HTTPPeer, channel: any Channel) {
        self.id = id
        self.owner = owner
        self.channel = channel
        lastActivity = NIODeadline.now().uptimeNanoseconds
    }

    /// A request arrived: the connection is not idle.
    package func touch() { lastActivity = NIODeadline.now().uptimeNanoseconds }
}

/// The connections of one small HTTP listener, confined to its one event loop: a cap, the fair
/// share of it per peer (`FairShareRoster`, `HTTPPeer`: by the loopback peer's uid), and what to
/// do when the process runs out of descriptors. A connection over the cap whose peer already
/// holds the most is closed at once; otherwise the longest-idle connection of the peer holding
/// the most is closed to make room. Counted, and logged at a bounded rate.
// @unchecked Sendable: confined to its listener's event loop.
package final class SmallHTTPConnections: @unchecked Sendable {
    struct Counters: Sendable, Equatable {
        var accepted = 0
        var open = 0
        var peak = 0
        /// Closed at once: the listener was full and their peer held the most.
        var refused = 0
        /// Closed to make room for a peer holding fewer (or, when descriptors ran out, for anyone).
        var evicted = 0
        /// Accepts that failed for want of descriptors or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM).
        var acceptErrors = 0
    }

    /// "web kiosk", "metrics": for log lines.
    let name: String
    let eventLoop: any EventLoop
    /// The cap as configured.
    let maxConnections: Int
    /// The cap in force: `maxConnections`, lowered when the process ran out of descriptors first.
    private(set) var cap: Int
    private(set) var counters = Counters()
    private var roster = FairShareRoster<SmallHTTPConnection>()
    private var nextID = 0
    private lazy var memoryTrim = MemoryTrimmer(eventLoop: eventLoop)
    private let socketTable = TCPSocketTable()
    private let logger: Logger
    private let logLimiter: LogRateLimiter

    package init(
        name: String, eventLoop: any EventLoop, maxConnections: Int, logger: Logger,
        logLimiter: LogRateLimiter = .shared
    ) {
        self.name = name
        self.eventLoop = eventLoop
        self.maxConnections = max(1, maxConnections)
        cap = self.maxConnections
        self.logger = logger
        self.logLimiter = logLimiter
    }

    var count: Int { roster.count }

    func connections(of peer: HTTPPeer) -> Int { roster.connections(of: peer) }

    /// Takes `channel` in, making room by the fair-share rule when the listener is full; nil (and
    /// the channel closed) when its peer already holds the most.
    func admit(_ channel: any Channel) -> SmallHTTPConnection? {
        eventLoop.preconditionInEventLoop()
        let peer = HTTPPeer.of(local: channel.localAddress, remote: channel.remoteAddress, table: socketTable)
        if roster.count >= cap {
            guard let victim = roster.fairShareVictim(for: peer) else {
                counters.refused += 1
                logger.limited(
                    limiter: logLimiter, .warning, "\(name).refused",
                    """
                    \(name): refused a connection of \(peer): \(roster.count) connections open, \(peer) holds \
                    \(roster.connections(of: peer)) (\(counters.refused) refused so far)
                    """)
                channel.close(promise: nil)
                return nil
            }
            evict(victim, for: "\(peer)")
        }
        nextID += 1
        let connection = SmallHTTPConnection(id: nextID, owner: peer, channel: channel)
        roster.add(connection)
        counters.accepted += 1
        counters.open = roster.count
        counters.peak = max(counters.peak, roster.count)
        let id = connection.id
        channel.closeFuture.hop(to: eventLoop).assumeIsolated().whenComplete { _ in
            self.roster.remove(id: id)
            self.counters.open = self.roster.count
            self.memoryTrim.schedule()
        }
        return connection
    }

    /// An accept failed for want of descriptors: counted, logged, and the cap lowered to what the
    /// descriptors allow (a few below the connections open now), closing connections by the
    /// fair-share rule to get there, so that new connections find a descriptor again and the
    /// listener stops running into the limit.
    func acceptFailed(_ error: IOError, pausedFor delay: TimeAmount) {
        eventLoop.preconditionInEventLoop()
        counters.acceptErrors += 1
        let headroom = max(2, roster.count / 16)
        let lowered = max(1, roster.count - headroom)
        if lowered < cap { cap = lowered }
        while roster.count > cap, let victim = roster.fairShareVictim(for: nil) {
            evict(victim, for: "descriptors")
        }
        logger.limited(
            limiter: logLimiter, .warning, "\(name).accept",
            """
            \(name): cannot accept a connection: \(error) (\(counters.acceptErrors) so far); accepting again \
            in \(delay.nanoseconds / 1_000_000) ms, at most \(cap) connections from now on
            """)
    }

    private func evict(_ victim: SmallHTTPConnection, for newcomer: String) {
        roster.remove(id: victim.id)
        counters.open = roster.count
        counters.evicted += 1
        let idle = Double(NIODeadline.now().uptimeNanoseconds &- victim.lastActivity) / 1e9
        logger.limited(
            limiter: logLimiter, .notice, "\(name).evicted",
            """
            \(name) full: closed a connection of \(victim.owner) (idle \(String(format: "%.1f", idle)) s) to make \
            room for \(newcomer) (\(counters.evicted) closed so far)
            """)
        victim.channel.close(promise: nil)
    }
}

/// On a listener's server channel: when an accept fails for want of descriptors or memory
/// (EMFILE, ENFILE, ENOBUFS, ENOMEM; NIO keeps the listener open and would retry at once, a busy
/// loop), stops accepting (`autoRead` off) and accepts again from a task scheduled on the loop
/// after a back-off: 50 ms, doubling to 1 s while the errors go on, back to 50 ms after an accept
/// succeeds. `exhausted` is told each time (the listener counts it, logs it, makes room). Used by
/// the HTTP listeners and the Unix socket server.
final class AcceptBackoffHandler: ChannelInboundHandler {
    typealias InboundIn = Any

    static let firstDelay: TimeAmount = .milliseconds(50)
    static let longestDelay: TimeAmount = .seconds(1)

    private let exhausted: (IOError, TimeAmount) -> Void
    private var delay = firstDelay
    private var resume: Scheduled<Void>?

    /// `exhausted(error, delay)`: on the loop, before accepting pauses for `delay`.
    init(exhausted: @escaping (IOError, TimeAmount) -> Void) {
        self.exhausted = exhausted
    }

    /// For a small HTTP listener: its connections table counts, logs and makes room.
    convenience init(connections: SmallHTTPConnections) {
        self.init { error, delay in connections.acceptFailed(error, pausedFor: delay) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        delay = Self.firstDelay
        context.fireChannelRead(data)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let error = error as? IOError, Self.isExhaustion(error.errnoCode) else {
            context.fireErrorCaught(error)
            return
        }
        exhausted(error, delay)
        guard resume == nil else { return }
        let channel = context.channel
        try? channel.syncOptions?.setOption(.autoRead, value: false)
        resume = context.eventLoop.assumeIsolated().scheduleTask(in: delay) {
            self.resume = nil
            try? channel.syncOptions?.setOption(.autoRead, value: true)
        }
        delay = min(delay * 2, Self.longestDelay)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        resume?.cancel()
        resume = nil
    }

    static func isExhaustion(_ code: CInt) -> Bool {
        code == EMFILE || code == ENFILE || code == ENOBUFS || code == ENOMEM
    }
}
