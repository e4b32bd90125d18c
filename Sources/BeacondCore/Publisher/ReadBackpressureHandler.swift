import NIOCore

/// Stops reading from a client while its channel is not writable, and resumes once it is.
/// A client that floods commands without reading the answers thus cannot make the daemon
/// buffer an unbounded number of replies: its requests wait in its own socket buffer.
final class ReadBackpressureHandler: ChannelDuplexHandler {
    typealias InboundIn = NIOAny
    typealias OutboundIn = NIOAny

    private var readPending = false

    func read(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            context.read()
        } else {
            readPending = true
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable, readPending {
            readPending = false
            context.read()
        }
        context.fireChannelWritabilityChanged()
    }
}
