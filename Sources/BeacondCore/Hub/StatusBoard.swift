import NIOCore

/// What a status request asks for: lists cut to `listLimit` entries (0 builds none: the metrics
/// scrape), the other devices heard with `devices`. `now` is the hub's engine time.
package struct StatusQuery {
    package var listLimit: Int
    package var devices: Bool
    package var now: Int64
}

/// One part of a status reply beside the hub's own: the socket server's counters, the scanner
/// backend's, the remote poller's health, MQTT's, the configuration in force, the devices heard.
/// Called on the hub's event loop.
package protocol StatusContributor: AnyObject {
    func contribute(to status: inout StatusMessage, for query: StatusQuery)
}

/// Answers status requests: the hub's part, then every contributor's in the order added, rendered
/// once and shared. One line answers every request for `reuseInterval` while no state is
/// published: building one for a full table costs milliseconds, and a thousand clients each asking
/// ten times a second must not turn that into seconds of the loop's time.
///
/// It is how outputs read the hub (they hold the board, never the hub). It holds its contributors
/// weakly: their owners (the daemon, a test) keep them. Confined to the hub's event loop.
// @unchecked Sendable: confined to the hub's event loop, which every entry point checks.
package final class StatusBoard: @unchecked Sendable {
    static let reuseInterval: Int64 = 100_000

    private struct Contributor {
        weak var value: (any StatusContributor)?
    }

    private let hub: TrackStateHub
    package var eventLoop: any EventLoop { hub.eventLoop }
    private var contributors: [Contributor] = []
    /// The shared lines: [0] without devices, [1] with them.
    private var cache: [(builtAt: Int64, seq: Int, line: ByteBuffer)?] = [nil, nil]
    /// Requests answered with a line built for an earlier request.
    private(set) var reused = 0

    package init(hub: TrackStateHub) {
        self.hub = hub
    }

    /// Adds `contributor`'s part to every reply from now on, after those added before.
    package func add(_ contributor: any StatusContributor) {
        contributors.append(Contributor(value: contributor))
    }

    /// The loop's clock, microseconds.
    private var loopMicros: Int64 { Int64(eventLoop.now.uptimeNanoseconds / 1000) }

    /// The status line for a client's request: the one built for an earlier request, if it is
    /// under `reuseInterval` old and no state was published since; else a new one. With
    /// `devices`, the line lists the other devices heard and is shared only with requests that
    /// asked for them too.
    func sharedLine(devices: Bool = false) -> ByteBuffer {
        eventLoop.preconditionInEventLoop()
        let now = loopMicros
        let slot = devices ? 1 : 0
        if let cached = cache[slot], cached.seq == hub.seq, now >= cached.builtAt,
            now - cached.builtAt < Self.reuseInterval
        {
            reused += 1
            return cached.line
        }
        let line = ByteBuffer(bytes: line(devices: devices))
        cache[slot] = (now, hub.seq, line)
        return line
    }

    /// A `{"type":"history"}` line: one page of the race so far (never shared: each asks its own page).
    func historyLine(_ query: HistoryQuery) -> ByteBuffer {
        eventLoop.preconditionInEventLoop()
        return ByteBuffer(bytes: hub.historyMessage(query).line)
    }

    /// A `{"type":"status"}` line: `message(listLimit:devices:)`, rendered.
    func line(listLimit: Int = TrackStateHub.statusListLimit, devices: Bool = false) -> [UInt8] {
        message(listLimit: listLimit, devices: devices).line
    }

    /// A status message: the hub's (lists cut to `listLimit` entries), then each contributor's
    /// part. With `devices` and no contributor listing them, the list is empty.
    package func message(listLimit: Int = TrackStateHub.statusListLimit, devices: Bool = false) -> StatusMessage {
        eventLoop.preconditionInEventLoop()
        var status = hub.statusMessage(listLimit: listLimit)
        status.counters.statusReused = reused
        let query = StatusQuery(listLimit: listLimit, devices: devices, now: hub.clock.now())
        for contributor in contributors {
            contributor.value?.contribute(to: &status, for: query)
        }
        if devices, status.devices == nil {
            let empty = NearbyDeviceTable().report(at: query.now)
            status.devices = empty.devices
            status.devicesCounters = empty.counters
        }
        return status
    }
}
