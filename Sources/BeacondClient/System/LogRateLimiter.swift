import Logging
import NIOCore
import Synchronization

/// Rate-limits the log lines that outside input drives (bad client lines, slow clients, remote
/// failures, scanner restarts), per kind, so a flood of input cannot flood the log.
///
/// Each kind has a token bucket: `burst` lines at once, then one more line per `refillInterval`.
/// Lines over the rate are counted, not written; the count comes back as "suppressed N <kind>
/// messages" before the kind's next line that gets through, or from `takeSummaries` (the daemon
/// calls it once a second), so nothing is dropped silently. Thread-safe: sites on NIO loops,
/// scanner threads and tasks share one limiter. Bounded: at most `maxKinds` kinds are tracked;
/// further kinds share the bucket `LogRateLimiter.overflowKind`.
package final class LogRateLimiter: Sendable {
    /// What to do with one line.
    enum Decision: Equatable {
        /// Write it; first write "suppressed N <kind> messages" when `suppressed` is above zero.
        case log(suppressed: Int)
        /// Over the rate: it was counted.
        case drop
    }

    /// Lines of one kind suppressed since its last report.
    struct Summary: Equatable {
        var kind: String
        var count: Int
        /// The most severe level among them.
        var level: Logger.Level

        var message: String { "suppressed \(count) \(kind) messages" }
    }

    private struct Bucket {
        var tokens: Int
        var refilledAt: Int64
        var suppressed = 0
        var level = Logger.Level.trace
    }

    /// The limiter the daemon hands its components; its summary service reports it. Components
    /// made elsewhere (tests, tools) get a limiter of their own, so none drains another's budget.
    package static let shared = LogRateLimiter()
    static let overflowKind = "other"

    let burst: Int
    /// Microseconds per token.
    let refillInterval: Int64
    let maxKinds: Int
    /// CLOCK_MONOTONIC microseconds: log pacing does not follow the engine's (possibly replayed) clock.
    package let clock: @Sendable () -> Int64
    private let buckets = Mutex<[String: Bucket]>([:])

    package init(
        burst: Int = 10, refillInterval: Int64 = 1_000_000, maxKinds: Int = 64,
        clock: @escaping @Sendable () -> Int64 = { MonotonicClock.micros() }
    ) {
        self.burst = max(1, burst)
        self.refillInterval = max(1, refillInterval)
        self.maxKinds = max(1, maxKinds)
        self.clock = clock
    }

    /// Whether a line of `kind` at `level` may be written now.
    func admit(_ kind: String, level: Logger.Level = .info) -> Decision {
        let now = clock()
        return buckets.withLock { buckets in
            let key = buckets[kind] != nil || buckets.count < maxKinds - 1 ? kind : Self.overflowKind
            var bucket = buckets[key] ?? Bucket(tokens: burst, refilledAt: now)
            refill(&bucket, at: now)
            let decision: Decision
            if bucket.tokens > 0 {
                bucket.tokens -= 1
                decision = .log(suppressed: bucket.suppressed)
                bucket.suppressed = 0
                bucket.level = .trace
            } else {
                bucket.suppressed += 1
                bucket.level = max(bucket.level, level)
                decision = .drop
            }
            buckets[key] = bucket
            return decision
        }
    }

    /// The kinds with suppressed lines, sorted by kind; their counts start again from zero.
    func takeSummaries() -> [Summary] {
        buckets.withLock { buckets in
            var summaries: [Summary] = []
            for (kind, bucket) in buckets where bucket.suppressed > 0 {
                summaries.append(Summary(kind: kind, count: bucket.suppressed, level: bucket.level))
                buckets[kind]?.suppressed = 0
                buckets[kind]?.level = .trace
            }
            return summaries.sorted { $0.kind < $1.kind }
        }
    }

    /// Writes `takeSummaries()` to `logger`, one line each.
    package func logSummaries(to logger: Logger) {
        for summary in takeSummaries() {
            logger.log(level: summary.level, "\(summary.message)")
        }
    }

    /// Tokens grow by one per elapsed `refillInterval`, up to `burst`. A clock that went back
    /// (it should not) adds nothing.
    private func refill(_ bucket: inout Bucket, at now: Int64) {
        guard now > bucket.refilledAt else { return }
        let earned = (now - bucket.refilledAt) / refillInterval
        guard earned > 0 else { return }
        if earned >= Int64(burst - bucket.tokens) {
            bucket.tokens = burst
            bucket.refilledAt = now
        } else {
            bucket.tokens += Int(earned)
            bucket.refilledAt += earned * refillInterval
        }
    }
}

extension Logger {
    /// Logs like `log(level:_:metadata:)` unless `kind` is over its rate in `limiter`. A line let
    /// through after some were suppressed is preceded by "suppressed N <kind> messages". Below the
    /// logger's level nothing is counted.
    package func limited(
        limiter: LogRateLimiter, _ level: Logger.Level, _ kind: String, _ message: @autoclosure () -> Logger.Message,
        metadata: @autoclosure () -> Logger.Metadata? = nil,
        file: String = #fileID, function: String = #function, line: UInt = #line
    ) {
        guard level >= logLevel else { return }
        guard case .log(let suppressed) = limiter.admit(kind, level: level) else { return }
        if suppressed > 0 {
            let summary = LogRateLimiter.Summary(kind: kind, count: suppressed, level: level)
            log(level: level, "\(summary.message)", file: file, function: function, line: line)
        }
        log(level: level, message(), metadata: metadata(), file: file, function: function, line: line)
    }
}
