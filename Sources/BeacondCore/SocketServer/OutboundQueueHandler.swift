import Logging
import NIOCore

/// What a client session sends, by how it may be queued when the client is backed up.
enum OutboundLine {
    /// An answer or notice (hello, status, pong, subscribed, error): never dropped.
    case reply(ByteBuffer)
    /// A state message: a newer one replaces one still queued.
    case state(ByteBuffer)
    /// A beacon update: dropped (and counted) beyond the per-client cap.
    case beacon(ByteBuffer)
    /// The last line (bye): discards whatever is queued and goes out next.
    case final(ByteBuffer)
}

/// Why a queued line was not written.
enum OutboundQueueError: Error {
    /// Dropped: the client's beacon queue was full.
    case dropped
    /// The connection closed (or was closed) before the line left the queue.
    case discarded
}

/// A client's outbound queue. While the channel is writable, lines go straight to it. Once the
/// channel's write buffer passes its high water mark, the client is backed up and lines wait
/// here, bounded: one state message at most (newer ones replace it), `maxQueuedBeacons` beacon
/// updates (more are dropped and reported with `{"type":"dropped","count":n}` at the gap), and
/// replies while everything held for the client (`heldBytes`) stays within `maxQueuedBytes`.
/// A client that has lost updates and does not catch up within `slowClientTimeout`, or loses
/// `maxConsecutiveDrops` beacon updates in a row, or would go over `maxQueuedBytes` with a
/// reply, is disconnected.
///
/// The publisher's fast path (`writeDirectly`): while nothing at all waits for the client, a state
/// or beacon line goes straight to the socket with one `send(2)`, without a trip through the
/// pipeline; whatever the socket does not take goes the way above.
final class OutboundQueueHandler: ChannelDuplexHandler {
    typealias InboundIn = NIOAny
    typealias OutboundIn = OutboundLine
    typealias OutboundOut = ByteBuffer

    private enum Kind {
        case reply, state, beacon, dropped
    }

    private struct Entry {
        var kind: Kind
        var bytes: ByteBuffer
        var promise: EventLoopPromise<Void>?
    }

    private let limits: ClientLimits
    private let counters: ServerCounters
    private let logger: Logger
    private var queue = CircularBuffer<Entry>(initialCapacity: 8)
    private var queuedBytes = 0
    private var queuedBeacons = 0
    private var channel: Channel?
    private var hasQueuedState = false
    /// Beacon updates dropped and not yet reported to the client.
    private var unreportedDrops = 0
    private var consecutiveDrops = 0
    private var slowTimer: Scheduled<Void>?
    private var closing = false
    private let logLimiter: LogRateLimiter
    private var context: ChannelHandlerContext?
    /// The handler's own descriptor for the socket (`DirectWriteDescriptor`); nil: every line goes
    /// through the channel.
    private var directWrites: DirectWriteDescriptor?

    /// The socket's descriptor as this handler holds it, while the direct path is open.
    var directDescriptor: CInt? { directWrites?.value }
    /// This handler gave the channel bytes that it may not have written yet: before writing past
    /// them, the direct path asks the channel (`bufferedWritableBytes`) whether they are gone.
    private var channelMayHoldBytes = true

    init(
        limits: ClientLimits, counters: ServerCounters, logger: Logger, logLimiter: LogRateLimiter,
        directWrites: DirectWriteDescriptor? = nil
    ) {
        self.directWrites = directWrites
        self.logLimiter = logLimiter
        self.limits = limits
        self.counters = counters
        self.logger = logger
    }

    /// Lines waiting in this queue (not counting the channel's own write buffer).
    var queuedLines: Int { queue.count }

    /// Bytes held for this client: its channel's write buffer (not yet taken by the kernel) plus
    /// this queue. On the channel's event loop.
    var heldBytes: Int {
        let buffered = (try? channel?.syncOptions?.getOption(ChannelOptions.bufferedWritableBytes)) ?? 0
        return queuedBytes + buffered
    }

    func handlerAdded(context: ChannelHandlerContext) {
        channel = context.channel
        self.context = context
    }

    // MARK: Direct writes

    /// Writes a state or beacon line straight to the socket, one non-blocking `send(2)` and no
    /// pipeline, when nothing at all waits for this client: no queued line, no drop notice owed,
    /// nothing in the channel's buffer. True when the line is taken care of: written whole, or
    /// in part with the rest handed to the channel at once (ahead of any later line). False
    /// when the caller must send it the usual way (`write`), where the queue's bounds,
    /// coalescing and drop notices apply: the socket took nothing (full: EAGAIN; or failed, which
    /// the channel's own write then finds and handles), or the direct path is not open.
    func writeDirectly(_ line: ByteBuffer, beacon: Bool) -> Bool {
        guard let directWrites, let context, !closing, queue.isEmpty, unreportedDrops == 0,
            context.channel.isActive, channelIsEmpty(context)
        else { return false }
        switch directWrites.send(line) {
        case .complete:
            counters.directWrites += 1
        case .partial(let count):
            counters.directPartialWrites += 1
            var rest = line
            rest.moveReaderIndex(forwardBy: count)
            channelMayHoldBytes = true
            context.writeAndFlush(wrapOutboundOut(rest), promise: nil)
        case .refused:
            counters.directRefused += 1
            return false
        }
        if beacon { consecutiveDrops = 0 }
        return true
    }

    /// The channel has written everything it was given (and is writable).
    private func channelIsEmpty(_ context: ChannelHandlerContext) -> Bool {
        guard channelMayHoldBytes else { return true }
        let channel = context.channel
        guard channel.isWritable, (try? channel.syncOptions?.getOption(ChannelOptions.bufferedWritableBytes)) == 0
        else { return false }
        channelMayHoldBytes = false
        return true
    }

    // MARK: Outbound

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let line = unwrapOutboundIn(data)
        channelMayHoldBytes = true
        guard !closing else {
            promise?.fail(OutboundQueueError.discarded)
            return
        }
        switch line {
        case .final(let bytes):
            discardQueue()
            context.write(wrapOutboundOut(bytes), promise: promise)
        case .reply(let bytes):
            let held = heldBytes + bytes.readableBytes
            guard held <= limits.maxQueuedBytes else {
                promise?.fail(OutboundQueueError.discarded)
                disconnect(
                    context: context,
                    reason: "a reply would make \(held) bytes waiting, over \(limits.maxQueuedBytes)")
                return
            }
            counters.peakQueuedBytes = max(counters.peakQueuedBytes, held)
            if canWriteDirectly(context) {
                context.write(wrapOutboundOut(bytes), promise: promise)
            } else {
                append(Entry(kind: .reply, bytes: bytes, promise: promise))
            }
        case .state(let bytes):
            if canWriteDirectly(context) {
                context.write(wrapOutboundOut(bytes), promise: promise)
            } else {
                enqueueState(bytes, promise: promise, context: context)
            }
        case .beacon(let bytes):
            if canWriteDirectly(context) {
                consecutiveDrops = 0
                context.write(wrapOutboundOut(bytes), promise: promise)
            } else {
                enqueueBeacon(bytes, promise: promise, context: context)
            }
        }
    }

    /// Nothing waits (not even a drop notice) and the channel takes more.
    private func canWriteDirectly(_ context: ChannelHandlerContext) -> Bool {
        queue.isEmpty && unreportedDrops == 0 && context.channel.isWritable
    }

    func flush(context: ChannelHandlerContext) {
        drain(context: context)
        context.flush()
    }

    // MARK: Inbound events

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable, !queue.isEmpty || unreportedDrops > 0 {
            drain(context: context)
            context.flush()
        }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        closing = true
        closeDirectWrites()
        discardQueue()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        discardQueue()
        channel = nil
        self.context = nil
        closeDirectWrites()
    }

    private func closeDirectWrites() {
        directWrites?.close()
        directWrites = nil
    }

    // MARK: Queue

    private func append(_ entry: Entry) {
        if unreportedDrops > 0 {
            // The notice goes exactly where the gap is: after the last update queued before it.
            let notice = ByteBuffer(bytes: DroppedMessage(count: unreportedDrops).line)
            unreportedDrops = 0
            queue.append(Entry(kind: .dropped, bytes: notice, promise: nil))
            queuedBytes += notice.readableBytes
        }
        queue.append(entry)
        queuedBytes += entry.bytes.readableBytes
        counters.peakQueuedLines = max(counters.peakQueuedLines, queue.count)
        counters.peakQueuedBytes = max(counters.peakQueuedBytes, queuedBytes)
    }

    private func enqueueState(_ bytes: ByteBuffer, promise: EventLoopPromise<Void>?, context: ChannelHandlerContext) {
        guard hasQueuedState, let index = queue.firstIndex(where: { $0.kind == .state }) else {
            hasQueuedState = true
            append(Entry(kind: .state, bytes: bytes, promise: promise))
            return
        }
        // Coalesce: the client gets the newest state, in the place of the one it had not taken.
        let old = queue[index]
        queuedBytes += bytes.readableBytes - old.bytes.readableBytes
        queue[index] = Entry(kind: .state, bytes: bytes, promise: promise)
        old.promise?.succeed()
        counters.coalescedStates += 1
        overCap(context: context)
    }

    private func enqueueBeacon(_ bytes: ByteBuffer, promise: EventLoopPromise<Void>?, context: ChannelHandlerContext) {
        guard queuedBeacons < limits.maxQueuedBeacons else {
            promise?.fail(OutboundQueueError.dropped)
            unreportedDrops += 1
            consecutiveDrops += 1
            counters.droppedLines += 1
            if consecutiveDrops >= limits.maxConsecutiveDrops {
                disconnect(context: context, reason: "\(consecutiveDrops) beacon updates dropped in a row")
            } else {
                overCap(context: context)
            }
            return
        }
        consecutiveDrops = 0
        queuedBeacons += 1
        append(Entry(kind: .beacon, bytes: bytes, promise: promise))
    }

    /// Writes queued lines while the channel takes them; the caller flushes.
    private func drain(context: ChannelHandlerContext) {
        channelMayHoldBytes = true
        while context.channel.isWritable, !closing {
            guard let entry = queue.popFirst() else {
                if unreportedDrops > 0 {
                    context.write(
                        wrapOutboundOut(ByteBuffer(bytes: DroppedMessage(count: unreportedDrops).line)),
                        promise: nil)
                    unreportedDrops = 0
                    continue
                }
                caughtUp()
                return
            }
            queuedBytes -= entry.bytes.readableBytes
            switch entry.kind {
            case .state: hasQueuedState = false
            case .beacon: queuedBeacons -= 1
            case .reply, .dropped: break
            }
            context.write(wrapOutboundOut(entry.bytes), promise: entry.promise)
        }
    }

    /// The client lost an update; it has `slowClientTimeout` to catch up.
    private func overCap(context: ChannelHandlerContext) {
        guard slowTimer == nil else { return }
        let timeout = limits.slowClientTimeout
        slowTimer = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) { [weak self] in
            guard let self, self.slowTimer != nil else { return }
            self.slowTimer = nil
            let seconds = Double(timeout.nanoseconds) / 1e9
            self.disconnect(context: context, reason: "still over its queue cap after \(seconds) s")
        }
    }

    private func caughtUp() {
        slowTimer?.cancel()
        slowTimer = nil
        consecutiveDrops = 0
    }

    private func disconnect(context: ChannelHandlerContext, reason: String) {
        guard !closing else { return }
        closing = true
        counters.disconnectedSlow += 1
        logger.limited(limiter: logLimiter, .notice, "client.slow", "disconnecting slow client: \(reason)")
        discardQueue()
        context.close(promise: nil)
    }

    private func discardQueue() {
        slowTimer?.cancel()
        slowTimer = nil
        while let entry = queue.popFirst() {
            entry.promise?.fail(OutboundQueueError.discarded)
        }
        queuedBytes = 0
        queuedBeacons = 0
        hasQueuedState = false
        unreportedDrops = 0
    }
}
