import Logging
import NIOCore

/// One connected client: greets it, answers its commands, and is its subscription to the hub.
/// Lines go out through the channel's `OutboundQueueHandler`. Lives on the hub's event loop.
final class ClientSession: ChannelInboundHandler, TrackStateSubscriber {
    typealias InboundIn = ClientRequest
    typealias OutboundOut = OutboundLine

    let id: Int
    private let hub: TrackStateHub
    private let limits: ClientLimits
    private let counters: ServerCounters
    private let logger: Logger
    private var context: ChannelHandlerContext?
    private(set) var wantsBeacons = false
    private var subscribed = false
    private var errorCount = 0
    /// Closing after too many errors, or saying goodbye: requests are ignored.
    private var closing = false

    init(id: Int, hub: TrackStateHub, limits: ClientLimits, counters: ServerCounters, logger: Logger) {
        self.id = id
        self.hub = hub
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
        logger.limited(.debug, "client.error", "client \(id): \(TerminalText.logged("\(error)"))")
        context.close(promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !closing else { return }
        switch unwrapInboundIn(data) {
        case .status:
            send(.reply(ByteBuffer(bytes: hub.statusLine())), context: context)
        case .ping:
            send(.reply(ByteBuffer(bytes: ProtocolMessages.pong())), context: context)
        case .subscribe(let beacons):
            wantsBeacons = beacons
            if subscribed { hub.recountBeaconSubscribers() }
            send(.reply(ByteBuffer(bytes: ProtocolMessages.subscribed(beacons: beacons))), context: context)
        case .invalid(let reason):
            answerError(reason, context: context)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.flush()
        context.fireChannelReadComplete()
    }

    // MARK: TrackStateSubscriber

    func deliver(state line: ByteBuffer) {
        guard let context, !closing else { return }
        context.writeAndFlush(wrapOutboundOut(.state(line)), promise: nil)
    }

    func deliver(beacon line: ByteBuffer) {
        guard let context, !closing, wantsBeacons else { return }
        context.writeAndFlush(wrapOutboundOut(.beacon(line)), promise: nil)
    }

    // MARK: Server side

    /// Sends `{"type":"bye"}` and closes once it is written, or after `limits.byeTimeout`.
    /// The future completes when the channel is closed.
    func sayGoodbye() -> EventLoopFuture<Void>? {
        guard let context else { return nil }
        closing = true
        leaveHub()
        return closeAfterWriting(ProtocolMessages.bye(), context: context)
    }

    // MARK: Private

    private func greet(context: ChannelHandlerContext) {
        guard !subscribed, !closing else { return }
        context.write(wrapOutboundOut(.reply(ByteBuffer(bytes: ProtocolMessages.hello()))), promise: nil)
        // Before the hub's first publication there is no state yet; it comes when published.
        if hub.stateLine.readableBytes > 0 {
            context.write(wrapOutboundOut(.state(hub.stateLine)), promise: nil)
        }
        context.flush()
        hub.subscribe(self)
        subscribed = true
    }

    private func leaveHub() {
        guard subscribed else { return }
        subscribed = false
        hub.unsubscribe(self)
    }

    private func send(_ line: OutboundLine, context: ChannelHandlerContext) {
        context.write(wrapOutboundOut(line), promise: nil)
    }

    private func answerError(_ reason: String, context: ChannelHandlerContext) {
        errorCount += 1
        counters.errors += 1
        send(.reply(ByteBuffer(bytes: ProtocolMessages.error(reason))), context: context)
        guard errorCount >= limits.maxErrors else { return }
        // Repeated abuse: say why, and close once that is written.
        closing = true
        counters.errors += 1
        counters.disconnectedAbuse += 1
        logger.limited(.notice, "client.abuse", "client \(id): \(errorCount) errors, closing the connection")
        leaveHub()
        _ = closeAfterWriting(ProtocolMessages.error("too many errors (\(errorCount)): closing the connection"),
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
