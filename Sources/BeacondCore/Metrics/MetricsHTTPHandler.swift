import NIOCore
import NIOHTTP1

/// One connection of the metrics endpoint, after NIOHTTP1's decoder. `GET /metrics` (a query
/// string is ignored) is answered with the exposition; any other path 404, any other method 405,
/// a request body 413, a request the decoder refused 400. One scrape at a time per connection:
/// pipelined requests wait for the answer before theirs, and a request that arrives while the
/// connection is not writable (a client sending requests without reading the answers) waits
/// until it is, so the answers held for one connection stay bounded (`SmallHTTP.bootstrap`).
final class MetricsHTTPHandler: SmallHTTPRequestHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    /// The Prometheus text format, version 0.0.4.
    static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    let connection: SmallHTTPConnection
    private let scrape: (any EventLoop) -> EventLoopFuture<[UInt8]>
    var requests = SmallHTTPRequestGate(methods: [.GET])

    init(connection: SmallHTTPConnection, scrape: @escaping (any EventLoop) -> EventLoopFuture<[UInt8]>) {
        self.connection = connection
        self.scrape = scrape
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        readRequest(context: context, data: data)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        routeParkedRequest(context: context)
        context.fireChannelWritabilityChanged()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        answer(error, context: context)
    }

    func route(_ context: ChannelHandlerContext, _ head: HTTPRequestHead) {
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
    func refuse(_ context: ChannelHandlerContext, _ refusal: SmallHTTP.Refusal) {
        respond(
            context, refusal.status, "text/plain; charset=utf-8", Array(refusal.text.utf8), keepAlive: false,
            extra: refusal.extraHeaders)
    }
}
