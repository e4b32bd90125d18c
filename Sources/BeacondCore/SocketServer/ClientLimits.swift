import NIOCore

/// Per-client limits of the socket server (docs/protocol.md, "Limits").
package struct ClientLimits: Sendable {
    /// Longest inbound line, bytes, the "\n" excluded.
    var maxLineLength = LineFrameDecoder.defaultMaxLength
    /// Error answers after which a connection is closed.
    var maxErrors = 10
    /// Channel write buffer: above `high` bytes the client counts as backed up (not writable),
    /// below `low` it is writable again.
    var writeBufferLow = 8 * 1024
    var writeBufferHigh = 32 * 1024
    /// Beacon updates held for a backed-up client; more are dropped (and counted).
    var maxQueuedBeacons = 64
    /// Bytes the daemon may hold for one client beyond the kernel's socket buffer: its channel
    /// write buffer plus its queue. A reply is taken only within it: a status reply that does not
    /// fit is refused with an error; any other reply that does not fit disconnects the client.
    /// (States and beacon updates are bounded by count on top: one state, `maxQueuedBeacons`.)
    var maxQueuedBytes = 256 * 1024
    /// Status replies per client in any one-second window; more are refused with an error.
    var maxStatusPerSecond = 10
    /// The clock of that window and of a client's last activity (monotonic nanoseconds): the
    /// loop's uptime; tests put a manual one in.
    var clock: @Sendable () -> UInt64 = { NIODeadline.now().uptimeNanoseconds }
    /// A client that had to lose updates (dropped beacons, coalesced states) and has not
    /// caught up within this time is disconnected.
    var slowClientTimeout: TimeAmount = .seconds(5)
    /// ... or that lost this many beacon updates in a row without catching up.
    var maxConsecutiveDrops = 1000
    /// How long shutdown waits for a client to take its `bye` before closing it anyway.
    var byeTimeout: TimeAmount = .milliseconds(500)
    /// State and beacon lines go straight to an idle client's socket (`OutboundQueueHandler.writeDirectly`);
    /// false sends every line through the pipeline (the benchmark's `--baseline`, the path before issue 15).
    package var directWrites = true

    package init() {}

    var waterMark: ChannelOptions.Types.WriteBufferWaterMark {
        .init(low: max(1, min(writeBufferLow, writeBufferHigh)), high: max(1, writeBufferHigh))
    }
}

/// The server's counters, reported as the `server` object of a status reply.
/// Confined to the hub's event loop, like everything the server does.
package final class ServerCounters {
    /// Connections accepted over the lifetime of the server (rejected ones excluded).
    var accepted = 0
    /// Clients connected now.
    var clients = 0
    /// Connections refused because `max_clients` were connected.
    var rejectedClients = 0
    /// Idle connections closed to make room for a client of a user holding fewer connections.
    var evictedClients = 0
    /// Status requests refused: over the per-client rate, or the reply would not fit the client's byte bound.
    var refusedStatus = 0
    /// Beacon update lines dropped for backed-up clients.
    package var droppedLines = 0
    /// State lines replaced by a newer one before a backed-up client took them.
    package var coalescedStates = 0
    /// Clients disconnected because they stayed over their queue cap.
    package var disconnectedSlow = 0
    /// Clients disconnected after `max_errors` errors.
    var disconnectedAbuse = 0
    /// Accepts that failed for want of descriptors or memory (EMFILE, ENFILE…); each paused
    /// accepting for a while (`AcceptBackoffHandler`). Logged, not in the status reply.
    var acceptErrors = 0
    /// Error lines sent.
    var errors = 0
    /// The most lines any one client had waiting in its queue (beyond the channel buffer).
    var peakQueuedLines = 0
    /// The most bytes the daemon held for any one client (channel write buffer plus queue).
    var peakQueuedBytes = 0
    /// State and beacon lines the socket took whole from the direct path (one send(2), no pipeline).
    package var directWrites = 0
    /// ... in part, the rest handed to the channel.
    package var directPartialWrites = 0
    /// ... not at all (EAGAIN, or an error the channel then handled): sent the usual way.
    package var directRefused = 0

    /// `status.server`; `queuedBytes`: what the daemon holds for all clients now (channel write
    /// buffers plus queues).
    func status(maxClients: Int, queuedBytes: Int) -> ServerStatus {
        var status = ServerStatus()
        status.clients = clients
        status.maxClients = maxClients
        status.accepted = accepted
        status.rejectedClients = rejectedClients
        status.evictedClients = evictedClients
        status.droppedLines = droppedLines
        status.coalescedStates = coalescedStates
        status.disconnectedSlow = disconnectedSlow
        status.disconnectedAbuse = disconnectedAbuse
        status.errors = errors
        status.refusedStatus = refusedStatus
        status.queuedBytes = queuedBytes
        status.peakQueuedLines = peakQueuedLines
        status.peakQueuedBytes = peakQueuedBytes
        return status
    }
}
