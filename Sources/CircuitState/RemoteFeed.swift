/// What the venue API has said so far.
struct RemoteFeed: Sendable {
    var lastSnapshot: RemoteSnapshot?
    var reportedMode: TrackMode?
    var lastSuccessAt: Int64?
    var evacuationLatched = false
    /// The latest fetch that reported the evacuation, while it is latched.
    var latchedSnapshot: RemoteSnapshot?
    /// Restored from disk at start: shown, never fresh, until the next successful fetch.
    var isRestored = false
    var lastFailureAt: Int64?
    var lastFailureReason: String?

    mutating func recordSuccess(_ snapshot: RemoteSnapshot, at now: Int64) {
        isRestored = false
        lastSnapshot = snapshot
        reportedMode = snapshot.trackMode
        lastSuccessAt = now
        switch reportedMode {
        case .evacuation:
            evacuationLatched = true
            latchedSnapshot = snapshot
        case .some:
            evacuationLatched = false
            latchedSnapshot = nil
        case nil:
            break
        }
    }

    mutating func recordFailure(reason: String, at now: Int64) {
        lastFailureAt = now
        lastFailureReason = reason
    }

    /// A state saved before a restart, fetched at `fetchedAt` (engine time, so its age is true).
    /// It is never fresh; a latched evacuation is in force again at once.
    mutating func restore(_ snapshot: RemoteSnapshot, fetchedAt: Int64, latchedSnapshot: RemoteSnapshot?) {
        lastSnapshot = snapshot
        reportedMode = snapshot.trackMode
        lastSuccessAt = fetchedAt
        evacuationLatched = latchedSnapshot != nil
        self.latchedSnapshot = latchedSnapshot
        isRestored = true
    }

    /// The instant the last known mode goes stale; nil while no known mode was fetched, or restored.
    func staleAt(staleAfter: Int64) -> Int64? {
        guard reportedMode != nil, !isRestored, let lastSuccessAt else { return nil }
        return lastSuccessAt.addingSaturating(staleAfter)
    }

    func isFresh(at now: Int64, staleAfter: Int64) -> Bool {
        guard let staleAt = staleAt(staleAfter: staleAfter) else { return false }
        return now < staleAt
    }

    /// R in the policies: the latched evacuation, else the fresh mode.
    func effectiveMode(at now: Int64, staleAfter: Int64) -> TrackMode? {
        if evacuationLatched { return .evacuation }
        return isFresh(at: now, staleAfter: staleAfter) ? reportedMode : nil
    }

    func status(at now: Int64, staleAfter: Int64) -> RemoteStatus? {
        guard lastSuccessAt != nil || lastFailureAt != nil else { return nil }
        return RemoteStatus(
            mode: effectiveMode(at: now, staleAfter: staleAfter), reportedMode: reportedMode, snapshot: lastSnapshot,
            lastSuccessAt: lastSuccessAt, age: lastSuccessAt.map { now.subtractingSaturating($0) },
            isFresh: isFresh(at: now, staleAfter: staleAfter), isLatched: evacuationLatched,
            latchedSnapshot: latchedSnapshot, isRestored: isRestored, lastFailureAt: lastFailureAt,
            lastFailureReason: lastFailureReason)
    }
}

/// The venue API's side of a published state.
public struct RemoteStatus: Hashable, Sendable {
    /// The mode the policy saw: the latched evacuation, else the fresh mode, else nil.
    public var mode: TrackMode?
    /// The mode of the last successful fetch, fresh or not; nil when it was unknown.
    public var reportedMode: TrackMode?
    public var snapshot: RemoteSnapshot?
    public var lastSuccessAt: Int64?
    /// Microseconds since the last successful fetch.
    public var age: Int64?
    public var isFresh: Bool
    public var isLatched: Bool
    /// While an evacuation is latched: the latest fetch that reported it.
    public var latchedSnapshot: RemoteSnapshot?
    /// Restored from disk at start and not fetched since: "last known".
    public var isRestored: Bool
    public var lastFailureAt: Int64?
    public var lastFailureReason: String?

    public init(
        mode: TrackMode?, reportedMode: TrackMode?, snapshot: RemoteSnapshot?, lastSuccessAt: Int64?, age: Int64?,
        isFresh: Bool, isLatched: Bool, latchedSnapshot: RemoteSnapshot? = nil, isRestored: Bool = false,
        lastFailureAt: Int64?, lastFailureReason: String?
    ) {
        self.mode = mode
        self.reportedMode = reportedMode
        self.snapshot = snapshot
        self.lastSuccessAt = lastSuccessAt
        self.age = age
        self.isFresh = isFresh
        self.isLatched = isLatched
        self.latchedSnapshot = latchedSnapshot
        self.isRestored = isRestored
        self.lastFailureAt = lastFailureAt
        self.lastFailureReason = lastFailureReason
    }

    /// The message to show: while an evacuation is latched, the evacuation's own message, so a
    /// later `{}` or unknown mode cannot blank it; otherwise the last fetch's.
    public var message: String? { isLatched ? latchedSnapshot?.message : snapshot?.message }

    /// The route out to show, by the same rule as `message`: a latched evacuation keeps its own.
    public var evacuationRoute: String? {
        isLatched ? latchedSnapshot?.evacuationRoute : snapshot?.evacuationRoute
    }
}
