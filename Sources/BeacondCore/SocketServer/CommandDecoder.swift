import NIOCore

/// Turns framed lines into requests; one line in, at most one request out.
final class CommandDecoder: ChannelInboundHandler {
    typealias InboundIn = InboundLine
    typealias InboundOut = ClientRequest

    let maxLineLength: Int

    init(maxLineLength: Int) {
        self.maxLineLength = maxLineLength
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let request: ClientRequest?
        switch unwrapInboundIn(data) {
        case .line(let line):
            request = ClientRequest.parse(line)
        case .tooLong:
            request = .invalid(reason: "line too long (over \(maxLineLength) bytes)")
        }
        if let request { context.fireChannelRead(wrapInboundOut(request)) }
    }
}
