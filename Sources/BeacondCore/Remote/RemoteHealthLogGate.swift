/// Holds the remote poller's health lines (failing, failing with another kind, recovered) to at
/// most one per transition per minute, so a venue API that flaps between up and down every 100 ms
/// writes two lines a minute, not two a poll (issue 14; docs/configuration.md, Logging).
///
/// A transition's line is written when the same transition (from one health to another) has not
/// been written in the last minute; otherwise it is held back and counted. The next line written
/// carries the count (`transitions_held_back`). When the line of the health the poller is in now was
/// held back, it is owed: the first poll after its minute writes it, so the log's last word on the
/// remote is never older than a minute. Times are CLOCK_MONOTONIC microseconds.
struct RemoteHealthLogGate: Sendable {
    static let window: Int64 = 60_000_000

    enum Health: Hashable, Sendable {
        case healthy
        case failing(RemoteFailureKind)
    }

    struct Transition: Hashable, Sendable {
        var from: Health
        var to: Health
    }

    /// When each transition's line was last written. Bounded: kinds are an enum.
    private var lastWritten: [Transition: Int64] = [:]
    /// Transitions held back since the last line written.
    private(set) var heldBack = 0
    /// The transition into the current health, when its line was held back.
    private(set) var owed: Transition?

    /// Whether the line of `transition` may be written at `now`: the count of transitions held back
    /// before it, to report with it, or nil when it is held back itself.
    mutating func admit(_ transition: Transition, at now: Int64) -> Int? {
        if let last = lastWritten[transition], now >= last, now - last < Self.window {
            heldBack += 1
            owed = transition
            return nil
        }
        lastWritten[transition] = now
        owed = nil
        defer { heldBack = 0 }
        return heldBack
    }

    /// On a poll that changes no health: the owed line, once its transition's minute has passed,
    /// with the count of transitions held back (itself included).
    mutating func takeOwed(at now: Int64) -> (transition: Transition, heldBack: Int)? {
        guard let owed, let last = lastWritten[owed], now < last || now - last >= Self.window else { return nil }
        lastWritten[owed] = now
        self.owed = nil
        defer { heldBack = 0 }
        return (owed, heldBack)
    }
}
