import BeacondTestSupport
import CircuitState
import Foundation
import Logging
import NIOCore
import NIOPosix
import Synchronization
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// A clock tests move by hand, in microseconds.
final class StepClock: Sendable {
    private let value = Mutex<Int64>(1_000_000)
    var now: Int64 { value.withLock { $0 } }
    func advance(_ micros: Int64) { value.withLock { $0 += micros } }
    var read: @Sendable () -> Int64 { { self.now } }
}

@Suite struct LogRateLimiterTests {
    @Test func aBurstPassesThenLinesAreCountedAndReportedWithTheNextOne() {
        let clock = StepClock()
        let limiter = LogRateLimiter(burst: 3, refillInterval: 1_000_000, clock: clock.read)
        let decisions = (0..<10).map { _ in limiter.admit("client.error") }
        #expect(decisions == Array(repeating: .log(suppressed: 0), count: 3) + Array(repeating: .drop, count: 7))
        clock.advance(1_000_000)
        #expect(limiter.admit("client.error") == .log(suppressed: 7))
        #expect(limiter.admit("client.error") == .drop)
    }

    @Test func kindsHaveTheirOwnBuckets() {
        let clock = StepClock()
        let limiter = LogRateLimiter(burst: 1, clock: clock.read)
        #expect(limiter.admit("client.error") == .log(suppressed: 0))
        #expect(limiter.admit("client.error") == .drop)
        #expect(limiter.admit("client.slow") == .log(suppressed: 0))
    }

    @Test func summariesReportAndResetTheCountsWithTheMostSevereLevel() {
        let clock = StepClock()
        let limiter = LogRateLimiter(burst: 1, clock: clock.read)
        _ = limiter.admit("b", level: .debug)
        _ = limiter.admit("b", level: .debug)
        _ = limiter.admit("b", level: .warning)
        _ = limiter.admit("a", level: .info)
        _ = limiter.admit("a", level: .info)
        #expect(
            limiter.takeSummaries() == [
                .init(kind: "a", count: 1, level: .info), .init(kind: "b", count: 2, level: .warning),
            ])
        #expect(limiter.takeSummaries().isEmpty)
        #expect(LogRateLimiter.Summary(kind: "a", count: 1, level: .info).message == "suppressed 1 a messages")
    }

    @Test func theNumberOfKindsIsBounded() {
        let clock = StepClock()
        let limiter = LogRateLimiter(burst: 1, maxKinds: 4, clock: clock.read)
        for index in 0..<3 { #expect(limiter.admit("kind\(index)") == .log(suppressed: 0)) }
        // Kinds past the cap share the overflow bucket.
        #expect(limiter.admit("kind3") == .log(suppressed: 0))
        #expect(limiter.admit("kind4") == .drop)
        #expect(limiter.admit("kind5") == .drop)
        #expect(limiter.takeSummaries() == [.init(kind: LogRateLimiter.overflowKind, count: 2, level: .info)])
    }

    @Test func aClockGoingBackwardsNeitherTrapsNorRefills() {
        let clock = StepClock()
        let limiter = LogRateLimiter(burst: 1, clock: clock.read)
        #expect(limiter.admit("k") == .log(suppressed: 0))
        clock.advance(-10_000_000)
        #expect(limiter.admit("k") == .drop)
    }

    /// 275,000 bad lines a minute (about 4,600 a second) for ten seconds: the log gets the burst,
    /// then about one line and one summary a second, and the summaries account for every line.
    @Test func aBadLineFloodProducesBoundedLinesWithASuppressedCount() {
        let clock = StepClock()
        let limiter = LogRateLimiter(burst: 10, refillInterval: 1_000_000, clock: clock.read)
        let captured = CapturedLines()
        let logger = captured.journalLogger()
        let total = 46_000
        for index in 0..<total {
            if index % 46 == 0 { clock.advance(10_000) }
            logger.limited(
                limiter: limiter, .notice, "client.abuse",
                "client \(index): 16 errors, closing the connection")
        }
        limiter.logSummaries(to: logger)
        let lines = captured.lines
        #expect(lines.count <= 10 + 2 * 10 + 1)
        let written = lines.filter { $0.contains("closing the connection") }.count
        let suppressed = lines.compactMap { line -> Int? in
            guard let range = line.range(of: "suppressed ") else { return nil }
            return Int(line[range.upperBound...].prefix { $0.isNumber })
        }.reduce(0, +)
        #expect(written + suppressed == total)
        #expect(lines.contains { $0.contains("suppressed") && $0.contains("client.abuse messages") })
    }

    @Test func linesBelowTheLevelAreNotCounted() {
        let clock = StepClock()
        let limiter = LogRateLimiter(burst: 1, clock: clock.read)
        let captured = CapturedLines()
        let logger = captured.journalLogger()
        for _ in 0..<5 { logger.limited(limiter: limiter, .debug, "client.error", "hidden") }
        #expect(captured.lines.isEmpty)
        #expect(limiter.takeSummaries().isEmpty)
    }
}

@Suite struct AuditSummariserTests {
    /// A 1 kHz flapping frame: 1,000 changes in one second give at most 21 lines, and the last
    /// state is in the log.
    @Test func aThousandChangesInASecondGiveAtMostTwentyOneLinesWithTheLastState() {
        var summariser = AuditSummariser()
        var lines: [String] = []
        let start: Int64 = 5_000_000
        for index in 0..<1000 {
            lines += summariser.record("state seq=\(index + 1)", at: start + Int64(index) * 1000)
        }
        #expect(summariser.flushDeadline == start + 1_000_000)
        #expect(lines.count == 20)
        lines += summariser.flush(at: start + 999_999)
        #expect(lines.count == 20)
        lines += summariser.flush(at: start + 1_000_000)
        #expect(lines.count == 21)
        #expect(lines.first == "state seq=1")
        #expect(lines[19] == "state seq=20")
        #expect(lines.last == "state: 1000 changes in the last second (980 summarised), last: state seq=1000")
        #expect(summariser.flushDeadline == nil)
    }

    @Test func twentyChangesASecondAreLoggedAsTheyCome() {
        var summariser = AuditSummariser()
        var lines: [String] = []
        for second in 0..<3 {
            for index in 0..<20 {
                lines += summariser.record("s\(second).\(index)", at: Int64(second) * 1_000_000 + Int64(index) * 40_000)
            }
            #expect(summariser.flushDeadline == nil)
        }
        #expect(lines.count == 60)
        #expect(!lines.contains { $0.hasPrefix("state:") })
    }

    @Test func aChangeAfterASummarisedSecondGetsTheSummaryFirst() {
        var summariser = AuditSummariser()
        var lines: [String] = []
        for index in 0..<25 { lines += summariser.record("a\(index)", at: Int64(index)) }
        lines += summariser.record("b", at: 2_000_000)
        #expect(lines.count == 22)
        #expect(lines[20] == "state: 25 changes in the last second (5 summarised), last: a24")
        #expect(lines[21] == "b")
    }
}

/// Runs `body` on a one-thread event loop with a journal logger writing into `captured`, and
/// shuts the loop down after.
func withJournalLoop(_ body: (any EventLoop, CapturedLines, Logger) throws -> Void) throws {
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    defer { try? group.syncShutdownGracefully() }
    let captured = CapturedLines()
    try body(group.next(), captured, captured.journalLogger())
}

@Suite struct StateAuditLogTests {
    /// The burst ends with no further change: the loop's timer writes the summary a second later.
    @Test func theSummaryOfABurstThatEndsComesFromTheTimerWithTheLastState() throws {
        try withJournalLoop { loop, captured, logger in
            let clock = StepClock()
            let audit = StateAuditLog(logger: logger, eventLoop: loop, clock: clock.read)
            try loop.submit {
                for index in 1...100 { audit.record("state seq=\(index) mode=red_flag") }
            }.wait()
            #expect(captured.lines.count == 20)
            clock.advance(1_000_000)
            _ = blockingWaitUntil(within: 5, intervalMicros: 20_000) { captured.lines.count >= 21 }
            #expect(captured.lines.count == 21)
            #expect(
                captured.lines.last
                    == """
                    <6>beacond: state: 100 changes in the last second (80 summarised), last: state seq=100 \
                    mode=red_flag\n
                    """
            )
        }
    }
}

@Suite struct DaemonSignalsTests {
    @Test func onlyRunBlocksTheHandledSignals() {
        #expect(DaemonSignals.needed(arguments: ["beacond", "run", "--backend", "replay"]))
        #expect(!DaemonSignals.needed(arguments: ["beacond", "scan"]))
        #expect(!DaemonSignals.needed(arguments: ["beacond", "replay", "run"]))
        #expect(!DaemonSignals.needed(arguments: ["beacond"]))
        #expect(!DaemonSignals.needed(arguments: []))
    }

    /// In a thread of its own, so the test runner's threads keep their mask.
    @Test func blockingMasksSIGHUPSIGTERMAndSIGINTInTheCallingThread() throws {
        let result = Mutex<[Bool]>([])
        let thread = Thread {
            // Start from an empty mask: the thread inherits the runner's.
            var none = sigset_t()
            sigemptyset(&none)
            pthread_sigmask(SIG_SETMASK, &none, nil)
            let blocked = DaemonSignals.block()
            result.withLock { $0 = [blocked] + [SIGHUP, SIGTERM, SIGINT, SIGUSR1].map(DaemonSignals.isBlocked) }
        }
        thread.start()
        _ = blockingWaitUntil(within: 5, intervalMicros: 1000) { !result.withLock { $0.isEmpty } }
        #expect(result.withLock { $0 } == [true, true, true, true, false])
    }
}

@Suite struct HubAuditFloodTests {
    /// A flapping input publishing 1,000 changes as fast as the hub can: the audit log stays
    /// bounded (20 lines and one summary a second), and the last state is in it.
    @Test func aThousandPublishedChangesGiveBoundedAuditLinesWithTheLastState() throws {
        try withJournalLoop { loop, captured, logger in
            let hub = TrackStateHub(
                eventLoop: loop, configuration: FusionConfiguration(),
                clock: ManualClock(1_000_000_000), backend: "test", logger: logger)
            let started = MonotonicClock.micros()
            let finalSeq = try loop.submit {
                hub.start(checkClockEvery: nil)
                for index in 0..<1000 { hub.setScanner(index % 2 == 0 ? .up : .down) }
                return hub.seq
            }.wait()
            let elapsedSeconds = Int((MonotonicClock.micros() - started) / 1_000_000) + 1
            var audit: [String] { captured.lines.filter { $0.contains(" state seq=") || $0.contains(" state: ") } }
            _ = blockingWaitUntil(within: 5, intervalMicros: 20_000) {
                audit.contains { $0.contains("last: state seq=\(finalSeq) ") }
            }
            try loop.submit { hub.stop() }.wait()
            #expect(finalSeq > 1000)
            #expect(audit.count <= 21 * elapsedSeconds)
            #expect(audit.contains { $0.contains("last: state seq=\(finalSeq) ") })
            #expect(audit.contains { $0.contains("changes in the last second (") })
        }
    }
}
