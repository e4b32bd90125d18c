import BeacondClient
import CircuitState

extension TrackStateHub {
    /// The history's bounds: about a race weekend at a venue's pace of changes, in a few MiB.
    static let historyLimit = 100_000
    static let historyByteLimit = 32 << 20

    /// One page of the race so far, its times on the daemon's wall clock (Unix µs).
    func historyMessage(_ query: HistoryQuery) -> HistoryMessage {
        eventLoop.preconditionInEventLoop()
        let now = clock.now()
        let offset = historyWallOffset(at: now)
        let wallNow = now.addingSaturating(offset)
        let since = query.sinceSeconds.map { now.subtractingSaturating($0 * 1_000_000) }
        var page = history.page(since: since ?? .min, after: query.after, limit: query.limit)
        page.stretches = page.stretches.map { stretch in
            var shifted = stretch
            shifted.start = stretch.start.addingSaturating(offset)
            shifted.end = stretch.end.addingSaturating(offset)
            if case .claim(var claim) = stretch.detail, let held = claim.heldFrom {
                claim.heldFrom = held.addingSaturating(offset)
                shifted.detail = .claim(claim)
            }
            return shifted
        }
        return HistoryMessage(
            now: wallNow, since: since.map { $0.addingSaturating(offset) }, page: page, kept: history.count,
            bytes: history.bytes, dropped: history.dropped, limit: history.limit, byteLimit: history.byteLimit)
    }

    /// Engine time to wall time: live, CLOCK_REALTIME minus CLOCK_BOOTTIME; in a replay, 0 (engine
    /// time is capture time). Kept while it moves less than a second, so that the pages of one
    /// report agree to the microsecond; a step of the wall clock (NTP, by hand) moves it.
    private func historyWallOffset(at now: Int64) -> Int64 {
        let offset = clock.wallMicros(at: now).subtractingSaturating(now)
        if let kept = historyOffset, kept.subtractingSaturating(offset).magnitude < 1_000_000 { return kept }
        historyOffset = offset
        return offset
    }
}
