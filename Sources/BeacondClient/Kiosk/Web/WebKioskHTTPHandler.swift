import NIOCore
import NIOHTTP1

/// One HTTP connection of the web kiosk, after NIOHTTP1's decoder (which bounds the header
/// size; a request it refuses is answered 400 here). Routes: `/`, `/events`, `/state`,
/// `/healthz`; anything else 404, methods other than GET and HEAD 405, any request body 413
/// (docs/kiosk-web.md). A connection serving `/events` is a stream: it registers with the hub,
/// and when the browser is backed up (the channel is not writable) only the newest event is
/// kept, sent when it is writable again: a slow browser never holds up the others. A request
/// that arrives while the connection is not writable (a client sending requests without reading
/// the answers) waits until it is: with NIO's `BackPressureHandler` and NIO's pipelining handler
/// (which delivers one request at a time), the answers held for a client stay bounded.
final class WebKioskHTTPHandler: SmallHTTPRequestHandler, FairShareMember {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let hub: WebKioskHub
    let connection: SmallHTTPConnection
    private var context: ChannelHandlerContext?
    var requests = SmallHTTPRequestGate(methods: [.GET, .HEAD])
    private var streaming = false
    private var pendingEvent: ByteBuffer?

    init(hub: WebKioskHub, connection: SmallHTTPConnection) {
        self.hub = hub
        self.connection = connection
        lastActivity = connection.lastActivity
    }

    // MARK: FairShareMember (a stream's place among the hub's streams)

    var id: Int { connection.id }
    var owner: HTTPPeer { connection.owner }
    /// When the stream opened: of one peer's streams, the oldest makes room first.
    private(set) var lastActivity: UInt64

    /// Closes the stream to make room for another peer's (`WebKioskHub.register`).
    func evict() {
        streaming = false
        pendingEvent = nil
        context?.close(promise: nil)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        endStream()
        self.context = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        endStream()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !streaming else { return }
        readRequest(context: context, data: data)
    }

    /// A stream's error closes it; otherwise `answer(_:context:)`.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard !streaming else {
            context.close(promise: nil)
            return
        }
        answer(error, context: context)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable, let event = pendingEvent {
            pendingEvent = nil
            write(context, event: event)
        }
        routeParkedRequest(context: context)
        context.fireChannelWritabilityChanged()
    }

    // MARK: Events

    /// One Server-Sent Event for this stream, already framed (`data: {…}\n\n`), from the hub.
    func send(event: ByteBuffer) {
        guard streaming, let context else { return }
        if context.channel.isWritable {
            write(context, event: event)
        } else {
            if pendingEvent != nil { hub.countCoalesced() }
            pendingEvent = event
        }
    }

    private func write(_ context: ChannelHandlerContext, event: ByteBuffer) {
        context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(event))), promise: nil)
    }

    private func endStream() {
        guard streaming else { return }
        streaming = false
        pendingEvent = nil
        hub.unregister(self)
    }

    // MARK: Routes

    func route(_ context: ChannelHandlerContext, _ head: HTTPRequestHead) {
        let path = head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        let keepAlive = head.isKeepAlive
        let isHead = head.method == .HEAD
        switch path {
        case "/":
            let page = WebKioskPage.html(view: hub.view(), lost: hub.lostView(), steady: hub.steady)
            respond(context, .ok, "text/html; charset=utf-8", page, isHead: isHead, keepAlive: keepAlive)
        case "/state":
            respond(
                context, .ok, "application/json", hub.stateDocument(), isHead: isHead, keepAlive: keepAlive)
        case "/preview":
            let size = WebKioskPreview.Size(query: WebKioskPreview.query(of: head.uri))
            respond(
                context, .ok, "text/html; charset=utf-8", WebKioskPreview.page(hub.presentation, size: size),
                isHead: isHead, keepAlive: keepAlive, policy: WebKioskAssets.previewPolicy)
        case "/preview/frame":
            let query = WebKioskPreview.query(of: head.uri)
            guard let frame = WebKioskPreview.frame(hub.presentation, query: query, now: MonotonicClock.wallMicros())
            else {
                let text = Array("no such preview frame: ?lang= must name a configured language, ?flag= a flag\n".utf8)
                return respond(
                    context, .notFound, "text/plain; charset=utf-8", text, isHead: isHead, keepAlive: keepAlive)
            }
            respond(
                context, .ok, "text/html; charset=utf-8", frame, isHead: isHead, keepAlive: keepAlive,
                policy: WebKioskAssets.previewFramePolicy)
        case "/healthz":
            let (status, text) =
                hub.reachable ? (HTTPResponseStatus.ok, "ok\n") : (.serviceUnavailable, "daemon unreachable\n")
            respond(
                context, status, "text/plain; charset=utf-8", Array(text.utf8), isHead: isHead, keepAlive: keepAlive)
        case "/events":
            if isHead {
                respond(context, .ok, "text/event-stream", [], isHead: true, keepAlive: keepAlive)
            } else {
                openStream(context, head)
            }
        default:
            respond(
                context, .notFound, "text/plain; charset=utf-8", Array("not found\n".utf8), isHead: isHead,
                keepAlive: keepAlive)
        }
    }

    private func openStream(_ context: ChannelHandlerContext, _ head: HTTPRequestHead) {
        lastActivity = NIODeadline.now().uptimeNanoseconds
        guard hub.register(self) else {
            let text = "too many kiosk streams (at most \(hub.maxStreams), and \(owner) holds the most)\n"
            requests.close()
            let full = SmallHTTP.Refusal(status: .serviceUnavailable, text: text, extraHeaders: [("Retry-After", "5")])
            return refuse(context, full)
        }
        streaming = true
        var headers = Self.headers(contentType: "text/event-stream; charset=utf-8")
        headers.add(name: "Connection", value: "close")
        let response = HTTPResponseHead(version: head.version, status: .ok, headers: headers)
        context.write(wrapOutboundOut(.head(response)), promise: nil)
        // Reconnect after 1 s when the stream breaks; then the current view.
        var greeting = context.channel.allocator.buffer(string: "retry: 1000\n\n")
        var event = hub.currentEvent()
        greeting.writeBuffer(&event)
        write(context, event: greeting)
    }

    private func respond(
        _ context: ChannelHandlerContext, _ status: HTTPResponseStatus, _ contentType: String, _ body: [UInt8],
        isHead: Bool, keepAlive: Bool, extra: [(String, String)] = [],
        policy: String = WebKioskAssets.contentSecurityPolicy
    ) {
        var headers = Self.headers(contentType: contentType, policy: policy)
        for (name, value) in extra { headers.add(name: name, value: value) }
        SmallHTTP.respond(context, status, headers: headers, body: body, isHead: isHead, keepAlive: keepAlive)
    }

    /// Answers at once and closes the connection (the request's body, if any, is not read).
    func refuse(_ context: ChannelHandlerContext, _ refusal: SmallHTTP.Refusal) {
        respond(
            context, refusal.status, "text/plain; charset=utf-8", Array(refusal.text.utf8), isHead: false,
            keepAlive: false, extra: refusal.extraHeaders)
    }

    /// The headers every response carries.
    static func headers(contentType: String, policy: String = WebKioskAssets.contentSecurityPolicy) -> HTTPHeaders {
        [
            "Content-Type": contentType,
            "Content-Security-Policy": policy,
            "X-Content-Type-Options": "nosniff",
            "Cache-Control": "no-store",
            "Referrer-Policy": "no-referrer",
        ]
    }
}
