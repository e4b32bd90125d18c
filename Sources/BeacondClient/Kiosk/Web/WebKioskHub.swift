import NIOCore

/// The web kiosk's state, confined to the HTTP server's event loop: the daemon link (fed by
/// `TrackStateFeed`, whose events hop onto the loop), the latest state, and the `/events`
/// streams. Every view change goes to every stream at once, and the current view again every
/// `refreshInterval` (the ages tick and the page knows its stream is alive). The streams share
/// `maxStreams` fairly per peer (`FairShareRoster` by the loopback peer's uid): when all are open,
/// a stream of a peer holding fewer closes the oldest stream of the peer holding the most.
// @unchecked Sendable: confined to the web kiosk's event loop.
final class WebKioskHub: @unchecked Sendable {
    struct Counters: Sendable, Equatable {
        /// Streams opened over the server's life.
        var acceptedStreams = 0
        /// Streams open now, and the most ever open at once.
        var streams = 0
        var peakStreams = 0
        /// `/events` requests refused because `maxStreams` were open and their peer held the most
        /// (answered 503).
        var refusedStreams = 0
        /// Streams closed to make room for a stream of a peer holding fewer.
        var evictedStreams = 0
        /// Views replaced by a newer one before a backed-up browser took them.
        var coalescedEvents = 0
        /// Events broadcast (each to every stream).
        var broadcasts = 0
    }

    let eventLoop: any EventLoop
    let maxStreams: Int
    let steady: Bool
    /// The languages and the exit.
    let presentation: KioskPresentation
    /// Told of every change of the link, to speak (`--speak`).
    private let voice: KioskVoice?
    private let refreshInterval: TimeAmount
    private let wallClock: @Sendable () -> Int64
    private(set) var link: KioskView.Link
    private(set) var counters = Counters()
    private var streams = FairShareRoster<WebKioskHTTPHandler>()
    private var lastBroadcast: WebKioskViewDocument?
    private var refresh: RepeatedTask?

    init(
        eventLoop: any EventLoop, maxStreams: Int, steady: Bool, socketPath: String,
        presentation: KioskPresentation = KioskPresentation(), voice: KioskVoice? = nil,
        refreshInterval: TimeAmount = .seconds(1),
        wallClock: @escaping @Sendable () -> Int64 = MonotonicClock.wallMicros
    ) {
        self.eventLoop = eventLoop
        self.maxStreams = max(0, maxStreams)
        self.steady = steady
        self.presentation = presentation
        self.voice = voice
        self.refreshInterval = refreshInterval
        self.wallClock = wallClock
        link = .unreachable(since: wallClock(), reason: "connecting to the daemon at \(socketPath)")
    }

    /// Starts the refresh ticks.
    func start() {
        eventLoop.preconditionInEventLoop()
        refresh = eventLoop.scheduleRepeatedTask(initialDelay: refreshInterval, delay: refreshInterval) {
            [weak self] _ in self?.broadcast()
        }
    }

    /// Stops the ticks; the streams are closed with their channels.
    func stop() {
        eventLoop.preconditionInEventLoop()
        refresh?.cancel()
        refresh = nil
        streams = FairShareRoster()
    }

    /// True while the daemon is connected.
    var reachable: Bool {
        if case .connected = link { return true }
        return false
    }

    /// The daemon's latest state while it is reachable; nil otherwise (a lost daemon's last word
    /// is not current).
    var latestState: StateMessage? {
        if case .connected(let state) = link { return state }
        return nil
    }

    /// What the kiosk shows now, in every language of the cycle (the page cycles through them).
    func view() -> WebKioskViewDocument {
        WebKioskViewDocument(link: link, now: wallClock(), presentation: presentation)
    }

    /// What the page shows when it loses its stream.
    func lostView() -> WebKioskViewDocument {
        WebKioskPage.lostView(presentation)
    }

    /// A feed event, on the loop: the link changes and the new view goes out at once.
    func apply(_ event: TrackStateFeed.Event) {
        eventLoop.preconditionInEventLoop()
        link.apply(event, now: wallClock())
        voice?.follow(link)
        let current = view()
        if current != lastBroadcast { broadcast(current) }
    }

    /// Registers a stream. When `maxStreams` are open, the oldest stream of the peer holding the
    /// most is closed for it, unless its own peer holds the most: then false (and counted).
    func register(_ stream: WebKioskHTTPHandler) -> Bool {
        eventLoop.preconditionInEventLoop()
        if streams.count >= maxStreams {
            guard let victim = streams.fairShareVictim(for: stream.owner) else {
                counters.refusedStreams += 1
                return false
            }
            streams.remove(id: victim.id)
            counters.evictedStreams += 1
            victim.evict()
        }
        streams.add(stream)
        counters.acceptedStreams += 1
        counters.streams = streams.count
        counters.peakStreams = max(counters.peakStreams, streams.count)
        return true
    }

    func unregister(_ stream: WebKioskHTTPHandler) {
        eventLoop.preconditionInEventLoop()
        if let found = streams.members[stream.id], found === stream {
            streams.remove(id: stream.id)
            counters.streams = streams.count
        }
    }

    func countCoalesced() {
        counters.coalescedEvents += 1
    }

    /// The current view as one framed event.
    func currentEvent() -> ByteBuffer {
        Self.event(view())
    }

    static func event(_ view: WebKioskViewDocument) -> ByteBuffer {
        var writer = JSONWriter()
        writer.bytes.append(contentsOf: "data: ".utf8)
        view.render(into: &writer)
        writer.bytes.append(contentsOf: "\n\n".utf8)
        return ByteBuffer(bytes: writer.bytes)
    }

    private func broadcast(_ view: WebKioskViewDocument? = nil) {
        let view = view ?? self.view()
        lastBroadcast = view
        counters.broadcasts += 1
        guard streams.count > 0 else { return }
        let event = Self.event(view)
        for stream in streams.members.values { stream.send(event: event) }
    }

    /// `{"reachable":…,"state":{…}|null,"view":{…}}` for `/state`.
    func stateDocument() -> [UInt8] {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("reachable"); writer.bool(reachable)
        writer.key("state")
        if let state = latestState { state.render(into: &writer) } else { writer.null() }
        writer.key("view"); view().render(into: &writer)
        writer.endObject()
        writer.newline()
        return writer.bytes
    }
}
