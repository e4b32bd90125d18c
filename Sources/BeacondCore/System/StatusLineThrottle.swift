/// `systemctl status`'s line follows the published state at most once per `interval`: each line is a
/// datagram (a socket, a send, a close) on the hub's loop, and a storm of changes must not cost one
/// per change. A line after a quiet spell goes at once; in a storm the latest line goes at the end of
/// the interval, so the status never stays behind the state. Times in µs, on the caller's clock.
struct StatusLineThrottle: Sendable {
    enum Action: Equatable {
        case sendNow
        /// Held: a send is due at this time (schedule `takeDue(at:)` then).
        case sendAt(Int64)
        /// Held: a send is already scheduled and will take this line.
        case held
    }

    let interval: Int64
    private var lastSent: Int64?
    private(set) var pending: String?

    init(interval: Int64 = 1_000_000) {
        self.interval = max(1, interval)
    }

    mutating func offer(_ line: String, at now: Int64) -> Action {
        guard let lastSent, now - lastSent < interval else {
            lastSent = now
            pending = nil
            return .sendNow
        }
        let wasPending = pending != nil
        pending = line
        return wasPending ? .held : .sendAt(lastSent + interval)
    }

    /// The held line, if any, to send now.
    mutating func takeDue(at now: Int64) -> String? {
        guard let line = pending else { return nil }
        pending = nil
        lastSent = now
        return line
    }
}
