import NIOCore

/// Answers a client's requests only as fast as it reads the answers: while its channel is not
/// writable, requests wait here (in order) and are released once it is writable again. With
/// NIO's `BackPressureHandler` stopping reads meanwhile, a client that sends commands without
/// reading cannot make the daemon build answers without bound. More than `maxPending`
/// waiting requests closes the connection.
final class RequestPacingHandler: ChannelInboundHandler {
    typealias InboundIn = ClientRequest
    typealias InboundOut = ClientRequest

    static let defaultMaxPending = 4096

    private let maxPending: Int
    private let counters: ServerCounters
    private var pending = CircularBuffer<ClientRequest>(initialCapacity: 4)
    private var closed = false

    init(maxPending: Int = RequestPacingHandler.defaultMaxPending, counters: ServerCounters) {
        self.maxPending = maxPending
        self.counters = counters
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !closed else { return }
        if pending.isEmpty && context.channel.isWritable {
            context.fireChannelRead(data)
            return
        }
        guard pending.count < maxPending else {
            closed = true
            pending.removeAll()
            counters.disconnectedSlow += 1
            context.close(promise: nil)
            return
        }
        pending.append(unwrapInboundIn(data))
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        context.fireChannelWritabilityChanged()
        guard !pending.isEmpty else { return }
        release(context: context)
    }

    func channelInactive(context: ChannelHandlerContext) {
        closed = true
        pending.removeAll()
        context.fireChannelInactive()
    }

    private func release(context: ChannelHandlerContext) {
        var released = false
        while !closed, context.channel.isWritable, let request = pending.popFirst() {
            context.fireChannelRead(wrapInboundOut(request))
            released = true
        }
        if released { context.fireChannelReadComplete() }
    }
}
