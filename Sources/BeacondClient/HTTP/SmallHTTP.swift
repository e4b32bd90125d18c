import NIOCore
import NIOHTTP1
import NIOPosix

/// What beacond's two small HTTP servers (the web kiosk and the metrics endpoint) share, after
/// NIOHTTP1's decoder: the checks a request head must pass before it is routed, and writing one
/// whole response.
package enum SmallHTTP {
    /// Why a request is answered before routing: its method is not served (405, with `Allow`), or
    /// it announces a body, which neither server reads (413).
    package struct Refusal: Sendable {
        package var status: HTTPResponseStatus
        package var text: String
        package var extraHeaders: [(String, String)]
    }

    /// The refusal `head` gets when only `methods` are served, nil when it may be routed.
    static func refusal(of head: HTTPRequestHead, methods: [HTTPMethod]) -> Refusal? {
        if !methods.contains(head.method) {
            let names = methods.map(\.rawValue)
            return Refusal(
                status: .methodNotAllowed, text: "only \(names.joined(separator: " and "))\n",
                extraHeaders: [("Allow", names.joined(separator: ", "))])
        }
        if hasBody(head) {
            return Refusal(status: .payloadTooLarge, text: "request bodies are not accepted\n", extraHeaders: [])
        }
        return nil
    }

    /// The listener both servers use: `connections` admits each connection (fair share per peer)
    /// and its server channel backs off when descriptors run out (`AcceptBackoffHandler`). Each
    /// connection reads only while it is writable (NIO's `BackPressureHandler`), a little at a time
    /// (at most 4 KiB a read, one read per cycle: the pipelined requests one read can bring stay
    /// few), and holds at most 32 KiB of unsent answers before it counts as backed up; then NIO's
    /// pipelining handler and the `route` of the server's handler (which waits for writability)
    /// take one request at a time. `handlers` adds the server's own handlers after NIOHTTP1's.
    package static func bootstrap(
        group: any EventLoopGroup, backlog: Int32, connections: SmallHTTPConnections,
        handlers: @escaping @Sendable (any Channel, SmallHTTPConnection) throws -> Void
    ) -> ServerBootstrap {
        ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.backlog, value: backlog)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .serverChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(AcceptBackoffHandler(connections: connections))
                }
            }
            .childChannelOption(ChannelOptions.writeBufferWaterMark, value: .init(low: 8 * 1024, high: 32 * 1024))
            .childChannelOption(ChannelOptions.maxMessagesPerRead, value: 1)
            .childChannelOption(
                ChannelOptions.recvAllocator,
                value: AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 1024, maximum: 4 * 1024)
            )
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    guard let connection = connections.admit(channel) else { return }
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(BackPressureHandler())
                    try sync.configureHTTPServerPipeline(withPipeliningAssistance: true, withErrorHandling: false)
                    try handlers(channel, connection)
                }
            }
    }

    /// A request announcing a body: a non-zero Content-Length or any Transfer-Encoding.
    static func hasBody(_ head: HTTPRequestHead) -> Bool {
        if !head.headers["Transfer-Encoding"].isEmpty { return true }
        return head.headers["Content-Length"].contains { $0.trimmingCharacters(in: " \t") != "0" }
    }

    /// Writes a whole response: `headers` plus Content-Length (and `Connection: close` unless
    /// `keepAlive`), the body unless `isHead`, then closes the connection unless `keepAlive`.
    package static func respond(
        _ context: ChannelHandlerContext, _ status: HTTPResponseStatus, headers: HTTPHeaders, body: [UInt8],
        isHead: Bool = false, keepAlive: Bool
    ) {
        guard context.channel.isActive else { return }
        var headers = headers
        headers.add(name: "Content-Length", value: String(body.count))
        if !keepAlive { headers.add(name: "Connection", value: "close") }
        let head = HTTPResponseHead(version: .http1_1, status: status, headers: headers)
        context.write(NIOAny(HTTPServerResponsePart.head(head)), promise: nil)
        if !isHead, !body.isEmpty {
            context.write(NIOAny(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(bytes: body)))), promise: nil)
        }
        let done = context.writeAndFlush(NIOAny(HTTPServerResponsePart.end(nil)))
        if !keepAlive {
            let channel = context.channel
            done.whenComplete { _ in channel.close(promise: nil) }
        }
    }
}

extension String {
    /// Without leading and trailing `characters`.
    fileprivate func trimmingCharacters(in characters: String) -> Substring {
        var text = Substring(self)
        while let first = text.first, characters.contains(first) { text.removeFirst() }
        while let last = text.last, characters.contains(last) { text.removeLast() }
        return text
    }
}
