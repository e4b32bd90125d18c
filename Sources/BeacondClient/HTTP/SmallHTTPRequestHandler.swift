import NIOCore
import NIOHTTP1

/// A handler of one connection of beacond's small HTTP servers (the web kiosk, the metrics
/// endpoint). How a request part goes through the connection's `SmallHTTPRequestGate` is the same
/// for both and written here once; what a request is answered with is the handler's.
package protocol SmallHTTPRequestHandler: ChannelInboundHandler where InboundIn == HTTPServerRequestPart {
    /// The connection's place in its listener's table: a whole request marks it active.
    var connection: SmallHTTPConnection { get }
    var requests: SmallHTTPRequestGate { get set }
    /// Answers a whole request.
    func route(_ context: ChannelHandlerContext, _ head: HTTPRequestHead)
    /// Answers at once and closes the connection.
    func refuse(_ context: ChannelHandlerContext, _ refusal: SmallHTTP.Refusal)
}

extension SmallHTTPRequestHandler {
    /// One request part, from `channelRead`: a refused head is answered at once; a whole request
    /// marks the connection active and is routed now, or parked until the connection is writable.
    package func readRequest(context: ChannelHandlerContext, data: NIOAny) {
        // The step is taken before it is acted on: routing may close the gate.
        let step = requests.read(unwrapInboundIn(data), writable: context.channel.isWritable)
        switch step {
        case .wait: break
        case .refuse(let refusal): refuse(context, refusal)
        case .parked: connection.touch()
        case .route(let head):
            connection.touch()
            route(context, head)
        }
    }

    /// Routes the parked request, if any, once the connection is writable again.
    package func routeParkedRequest(context: ChannelHandlerContext) {
        if let head = requests.unpark(writable: context.channel.isWritable) { route(context, head) }
    }

    /// An error from the pipeline, from `errorCaught`: a request NIOHTTP1's decoder refused
    /// (malformed, or headers beyond its limit) gets 400 and is closed; any other error closes the
    /// connection.
    package func answer(_ error: any Error, context: ChannelHandlerContext) {
        guard let refusal = requests.refusal(after: error) else {
            context.close(promise: nil)
            return
        }
        refuse(context, refusal)
    }
}
