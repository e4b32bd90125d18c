import Logging
import NIOCore

/// Keeps the audit log of published state changes readable under a flood (a frame flapping at
/// 1 kHz) without ever dropping a change silently.
///
/// Up to `limit` audit lines a second are written as they come. Past that, the lines of that second
/// are held back and one line sums them up when the second ends: "state: N changes in the last
/// second (M summarised), last: <audit line of the last one>". The last state of a burst is always
/// in the log, either as its own line or in that summary. Times are CLOCK_MONOTONIC microseconds.
struct AuditSummariser {
    static let limit = 20
    static let window: Int64 = 1_000_000

    private var windowStart: Int64?
    private var changesInWindow = 0
    private var summarised = 0
    private var lastSummarised: String?

    /// When the held-back lines must be summed up (`flush(at:)`); nil when nothing is held back.
    var flushDeadline: Int64? {
        guard summarised > 0, let windowStart else { return nil }
        return windowStart &+ Self.window
    }

    /// The lines to write for one audit line at `now`: the summary of an ended second, if one is due,
    /// then `line` itself unless it is over the limit and held back.
    mutating func record(_ line: String, at now: Int64) -> [String] {
        var output = flush(at: now)
        if windowStart == nil {
            windowStart = now
            changesInWindow = 0
        }
        changesInWindow += 1
        if changesInWindow <= Self.limit {
            output.append(line)
        } else {
            summarised += 1
            lastSummarised = line
        }
        return output
    }

    /// The summary line once the second that held lines back has ended, else nothing. A second
    /// with nothing held back ends quietly.
    mutating func flush(at now: Int64) -> [String] {
        guard let start = windowStart, now >= start &+ Self.window || now < start else { return [] }
        var output: [String] = []
        if summarised > 0, let last = lastSummarised {
            output.append(
                "state: \(changesInWindow) changes in the last second (\(summarised) summarised), last: "
                    + last)
        }
        windowStart = nil
        changesInWindow = 0
        summarised = 0
        lastSummarised = nil
        return output
    }
}

/// The hub's audit log: an `AuditSummariser` on the hub's event loop, with a timer for the summary
/// of a burst that ends. Used only on `eventLoop`, hence `@unchecked Sendable`.
// @unchecked Sendable: used only on the hub's event loop.
final class StateAuditLog: @unchecked Sendable {
    private let logger: Logger
    private let eventLoop: any EventLoop
    private let clock: @Sendable () -> Int64
    private var summariser = AuditSummariser()
    private var flushTimer: Scheduled<Void>?

    init(
        logger: Logger, eventLoop: any EventLoop,
        clock: @escaping @Sendable () -> Int64 = { MonotonicClock.micros() }
    ) {
        self.logger = logger
        self.eventLoop = eventLoop
        self.clock = clock
    }

    func record(_ line: String) {
        let now = clock()
        for output in summariser.record(line, at: now) { logger.info("\(output)") }
        armFlush(now: now)
    }

    private func armFlush(now: Int64) {
        guard flushTimer == nil, let deadline = summariser.flushDeadline else { return }
        flushTimer = eventLoop.scheduleTask(in: .microseconds(max(0, deadline - now))) { [weak self] in
            guard let self else { return }
            self.flushTimer = nil
            let now = self.clock()
            for output in self.summariser.flush(at: now) { self.logger.info("\(output)") }
            self.armFlush(now: now)
        }
    }
}
