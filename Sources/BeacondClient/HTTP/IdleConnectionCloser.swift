import NIOCore

/// Closes the connection when the `IdleStateHandler` before it reports it idle: no request, and
/// nothing written either (a web kiosk stream writes every second unless its browser stopped
/// reading). Other events pass on.
package final class IdleConnectionCloser: ChannelInboundHandler {
    package typealias InboundIn = NIOAny

    package init() {}

    package func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard event is IdleStateHandler.IdleStateEvent else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        context.close(promise: nil)
    }
}
