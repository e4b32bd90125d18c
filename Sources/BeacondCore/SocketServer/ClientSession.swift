import Logging
import NIOCore

/// One connected client: greets it, answers its commands, and is its subscription to the publisher.
/// Lines go out through the channel's `OutboundQueueHandler`. Lives on the hub's event loop.
final class ClientSession: ChannelInboundHandler, TrackStateSubscriber {
    typealias InboundIn = ClientRequest
    typealias OutboundOut = OutboundLine

    let id: Int
    /// The peer's user id (SO_PEERCRED), for the fair share of `max_clients`.
    let uid: UInt32
    /// When the client last sent a request (or connected), NIODeadline uptime nanoseconds: the
    /// longest-idle connection is the one with the oldest.
    var lastActivity: UInt64
    private let publisher: TrackStatePublisher
    private let status: StatusBoard
    let outbound: OutboundQueueHandler
    private var statusWindow: RequestWindow
    private let limits: ClientLimits
    private let counters: ServerCounters
    private let logger: Logger
    private var context: ChannelHandlerContext?
    private(set) var wantsBeacons = false
    private var subscribed = false
    private var errorCount = 0
    private let logLimiter: LogRateLimiter
    /// Closing after too many errors, or saying goodbye: requests are ignored.
    private var closing = false

    init(
        id: Int, uid: UInt32, publisher: TrackStatePublisher, status: StatusBoard, outbound: OutboundQueueHandler,
        limits: ClientLimits,
        counters: ServerCounters, logger: Logger, logLimiter: LogRateLimiter
    ) {
        self.id = id
        self.logLimiter = logLimiter
        self.uid = uid
        lastActivity = limits.clock()
        self.publisher = publisher
        self.status = status
        self.outbound = outbound
        statusWindow = RequestWindow(limit: limits.maxStatusPerSecond)
        self.limits = limits
        self.counters = counters
        self.logger = logger
    }

    // MARK: Channel events

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { greet(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        greet(context: context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        leaveHub()
        self.context = nil
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        leaveHub()
        self.context = nil
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        logger.limited(limiter: logLimiter, .debug, "client.error", "client \(id): \(TerminalText.logged("\(error)"))")
        context.close(promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !closing else { return }
        lastActivity = limits.clock()
        switch unwrapInboundIn(data) {
        case .status:
            answerStatus(devices: false, context: context)
        case .statusWithDevices:
            answerStatus(devices: true, context: context)
        case .history(let query):
            answerHistory(query, context: context)
        case .ping:
            send(.reply(ByteBuffer(bytes: PongMessage().line)), context: context)
        case .subscribe(let beacons):
            wantsBeacons = beacons
            if subscribed { publisher.recountBeaconSubscribers() }
            send(.reply(ByteBuffer(bytes: SubscribedMessage(beacons: beacons).line)), context: context)
        case .invalid(let reason):
            answerError(reason, context: context)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.flush()
        context.fireChannelReadComplete()
    }

    // MARK: TrackStateSubscriber

    // Straight to the socket when nothing waits for the client (`OutboundQueueHandler.writeDirectly`),
    // else through the pipeline and the client's queue.

    func deliver(state line: ByteBuffer) {
        if deliverDirectly(state: line) { return }
        deliverQueued(state: line)
    }

    func deliverDirectly(state line: ByteBuffer) -> Bool {
        guard context != nil, !closing else { return true }
        return outbound.writeDirectly(line, beacon: false)
    }

    func deliverQueued(state line: ByteBuffer) {
        guard let context, !closing else { return }
        context.writeAndFlush(wrapOutboundOut(.state(line)), promise: nil)
    }

    func deliver(beacon line: ByteBuffer) {
        guard let context, !closing, wantsBeacons else { return }
        if outbound.writeDirectly(line, beacon: true) { return }
        context.writeAndFlush(wrapOutboundOut(.beacon(line)), promise: nil)
    }

    // MARK: Server side

    /// Bytes held for this client (its channel write buffer plus its queue).
    var heldBytes: Int { outbound.heldBytes }

    /// Sends `{"type":"bye","reason":reason}` and closes once it is written, or after
    /// `limits.byeTimeout`. The future completes when the channel is closed.
    func sayGoodbye(reason: String) -> EventLoopFuture<Void>? {
        guard let context else { return nil }
        closing = true
        leaveHub()
        return closeAfterWriting(ByeMessage(reason: reason).line, context: context)
    }

    // MARK: Private

    private func greet(context: ChannelHandlerContext) {
        guard !subscribed, !closing else { return }
        context.write(wrapOutboundOut(.reply(ByteBuffer(bytes: HelloMessage().line))), promise: nil)
        // Before the hub's first publication there is no state yet; it comes when published.
        if publisher.stateLine.readableBytes > 0 {
            context.write(wrapOutboundOut(.state(publisher.stateLine)), promise: nil)
        }
        context.flush()
        publisher.subscribe(self)
        subscribed = true
    }

    /// A status reply, unless the client asked too often or it would not fit the client's byte bound.
    private func answerStatus(devices: Bool, context: ChannelHandlerContext) {
        guard admitsReply(named: "status", context: context) else { return }
        reply(status.sharedLine(devices: devices), named: "status", context: context)
    }

    /// A page of the history, under the same rate and byte bound as a status reply (a page of the
    /// largest size, 1,000 stretches, is about 200 KB).
    private func answerHistory(_ query: HistoryQuery, context: ChannelHandlerContext) {
        guard admitsReply(named: "history", context: context) else { return }
        reply(status.historyLine(query), named: "history", context: context)
    }

    /// Whether the client is within its status and history requests per second (one window for
    /// both); else says so.
    private func admitsReply(named name: String, context: ChannelHandlerContext) -> Bool {
        guard statusWindow.admit(at: lastActivity) else {
            counters.refusedStatus += 1
            answerError("too many \(name) requests (at most \(limits.maxStatusPerSecond) per second)", context: context)
            return false
        }
        return true
    }

    private func reply(_ line: ByteBuffer, named name: String, context: ChannelHandlerContext) {
        let held = outbound.heldBytes
        guard held + line.readableBytes <= limits.maxQueuedBytes else {
            counters.refusedStatus += 1
            let reason =
                "\(name) reply refused: \(line.readableBytes) bytes would not fit with \(held) bytes still "
                + "waiting for this client (at most \(limits.maxQueuedBytes)); read first"
            answerError(reason, context: context)
            return
        }
        send(.reply(line), context: context)
    }

    private func leaveHub() {
        guard subscribed else { return }
        subscribed = false
        publisher.unsubscribe(self)
    }

    private func send(_ line: OutboundLine, context: ChannelHandlerContext) {
        context.write(wrapOutboundOut(line), promise: nil)
    }

    private func answerError(_ reason: String, context: ChannelHandlerContext) {
        errorCount += 1
        counters.errors += 1
        send(.reply(ByteBuffer(bytes: ErrorMessage(reason).line)), context: context)
        guard errorCount >= limits.maxErrors else { return }
        // Repeated abuse: say why, and close once that is written.
        closing = true
        counters.errors += 1
        counters.disconnectedAbuse += 1
        logger.limited(
            limiter: logLimiter, .notice, "client.abuse",
            "client \(id): \(errorCount) errors, closing the connection")
        leaveHub()
        _ = closeAfterWriting(
            ErrorMessage("too many errors (\(errorCount)): closing the connection").line,
            context: context)
    }

    /// Writes `line` as the last one (ahead of anything still queued) and closes the channel
    /// once it is written, or after `limits.byeTimeout` if the client does not take it.
    private func closeAfterWriting(_ line: [UInt8], context: ChannelHandlerContext) -> EventLoopFuture<Void> {
        let channel = context.channel
        let written = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(wrapOutboundOut(.final(ByteBuffer(bytes: line))), promise: written)
        let timer = context.eventLoop.assumeIsolated().scheduleTask(in: limits.byeTimeout) {
            channel.close(promise: nil)
        }
        written.futureResult.assumeIsolated().whenComplete { _ in
            timer.cancel()
            channel.close(promise: nil)
        }
        return channel.closeFuture
    }
}

/// At most `limit` requests in any one-second window: remembers the times of the last `limit` admitted.
struct RequestWindow {
    static let window: UInt64 = 1_000_000_000

    let limit: Int
    private var admitted: CircularBuffer<UInt64>

    init(limit: Int) {
        self.limit = max(0, limit)
        admitted = CircularBuffer(initialCapacity: max(1, self.limit))
    }

    /// True (and counted) when a request at `now` (nanoseconds, monotonic) is within the limit.
    mutating func admit(at now: UInt64) -> Bool {
        if admitted.count >= limit {
            guard let oldest = admitted.first, now >= oldest, now - oldest >= Self.window else { return false }
            admitted.removeFirst()
        }
        admitted.append(now)
        return true
    }
}
