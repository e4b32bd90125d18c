import NIOCore
import NIOHTTP1

/// One connection of the metrics endpoint, after NIOHTTP1's decoder. `GET /metrics` (a query
/// string is ignored) is answered with the exposition; any other path 404, any other method 405,
/// a request body 413, a request the decoder refused 400. One scrape at a time per connection:
/// pipelined requests wait for the answer before theirs, and a request that arrives while the
/// connection is not writable (a client sending requests without reading the answers) waits
/// until it is, so the answers held for one connection stay bounded (`SmallHTTP.bootstrap`).
final class MetricsHTTPHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    /// The Prometheus text format, version 0.0.4.
    static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    private let connection: SmallHTTPConnection
    private let scrape: (any EventLoop) -> EventLoopFuture<[UInt8]>
    private var requests = SmallHTTPRequestGate(methods: [.GET])

    init(connection: SmallHTTPConnection, scrape: @escaping (any EventLoop) -> EventLoopFuture<[UInt8]>) {
        self.connection = connection
        self.scrape = scrape
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch requests.read(unwrapInboundIn(data), writable: context.channel.isWritable) {
        case .wait: break
        case .refuse(let refusal): refuse(context, refusal)
        case .parked: connection.touch()
        case .route(let head):
            connection.touch()
            route(context, head)
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if let head = requests.unpark(writable: context.channel.isWritable) { route(context, head) }
        context.fireChannelWritabilityChanged()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let refusal = requests.refusal(after: error) else {
            context.close(promise: nil)
            return
        }
        refuse(context, refusal)
    }

    private func route(_ context: ChannelHandlerContext, _ head: HTTPRequestHead) {
        let path = head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        let keepAlive = head.isKeepAlive
        guard path == "/metrics" else {
            let text = "not found: the metrics are at /metrics\n"
            return respond(context, .notFound, "text/plain; charset=utf-8", Array(text.utf8), keepAlive: keepAlive)
        }
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        scrape(context.eventLoop).whenComplete { result in
            let (handler, context) = loopBound.value
            switch result {
            case .success(let body):
                handler.respond(context, .ok, Self.contentType, body, keepAlive: keepAlive)
            case .failure(let error):
                let text = "metrics unavailable: \(error)\n"
                handler.respond(
                    context, .serviceUnavailable, "text/plain; charset=utf-8", Array(text.utf8), keepAlive: false)
            }
        }
    }

    private func respond(
        _ context: ChannelHandlerContext, _ status: HTTPResponseStatus, _ contentType: String, _ body: [UInt8],
        keepAlive: Bool, extra: [(String, String)] = []
    ) {
        var headers: HTTPHeaders = [
            "Content-Type": contentType, "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff",
        ]
        for (name, value) in extra { headers.add(name: name, value: value) }
        SmallHTTP.respond(context, status, headers: headers, body: body, keepAlive: keepAlive)
    }

    /// Answers at once and closes the connection.
    private func refuse(_ context: ChannelHandlerContext, _ refusal: SmallHTTP.Refusal) {
        respond(
            context, refusal.status, "text/plain; charset=utf-8", Array(refusal.text.utf8), keepAlive: false,
            extra: refusal.extraHeaders)
    }
}
