import AsyncHTTPClient
import CircuitState
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization

/// Where the poller delivers each fetch's outcome. Calls come one at a time, in order, and
/// the poller waits for each before it polls again.
protocol RemoteStateSink: Sendable {
    /// A successful fetch; `wallMicros` is the wall-clock time it completed (Unix µs).
    func remoteFetched(_ snapshot: RemoteSnapshot, wallMicros: Int64) async
    /// A failed fetch: the last good state is kept.
    func remoteFailed(_ failure: RemoteFailure) async
}

/// The poller's health, for `{"cmd":"status"}`.
struct RemotePollerCounters: Hashable, Sendable {
    var polls = 0
    var successes = 0
    var failures: [RemoteFailureKind: Int] = [:]
    var consecutiveFailures = 0
    var lastError: RemoteFailure?
    /// Unix µs.
    var lastErrorWallMicros: Int64?
    /// Unix µs.
    var lastSuccessWallMicros: Int64?

    var totalFailures: Int { failures.values.reduce(0, +) }

    /// `status.remote_poller`; `url` without credentials.
    func status(url: String?) -> RemotePollerStatus {
        var status = RemotePollerStatus(url: url)
        status.polls = polls
        status.successes = successes
        for kind in RemoteFailureKind.allCases { status.failures[kind.rawValue] = failures[kind, default: 0] }
        status.consecutiveFailures = consecutiveFailures
        status.lastError = lastError?.reason
        status.lastErrorKind = lastError?.kind.rawValue
        status.lastErrorAt = lastErrorWallMicros.map(WallTime.init(micros:))
        status.lastSuccessAt = lastSuccessWallMicros.map(WallTime.init(micros:))
        return status
    }
}

/// Polls the venue API (`remote.url`) and delivers each result to a sink.
///
/// - Successes come every `poll_interval`, counted start to start.
/// - Failures keep the last good state (the sink is told, the engine's staleness rule decides);
///   consecutive failures back off exponentially with jitter, to at most `poll_interval × 6`
///   and at most `stale_after / 3` (see `RemoteBackoff`).
/// - Each kind of failure is logged once when it starts (or replaces another kind), and the
///   recovery once; every poll is logged at debug level only.
///
/// A swift-service-lifecycle `Service`: `run()` polls until cancelled or a graceful shutdown.
final class RemoteStatePoller: Service, Sendable {
    private struct Shared {
        var remote: PreparedRemote
        var counters = RemotePollerCounters()
        /// The kind being failed with, as last logged; nil while healthy.
        var failingKind: RemoteFailureKind?
        var failingSinceWallMicros: Int64?
        var everSucceeded = false
        var client: HTTPClient?
        /// Set by `update`: the next poll builds a new client.
        var clientIsStale = false
    }

    private let shared: Mutex<Shared>
    private let sink: any RemoteStateSink
    private let logger: Logger
    private let eventLoopGroup: any EventLoopGroup
    private let random: @Sendable () -> Double
    private let wallClock: @Sendable () -> Int64
    private let wakeup = PollWakeup()
    private let logLimiter: LogRateLimiter

    /// - Parameters:
    ///   - random: the jitter source, in [0, 1).
    ///   - wallClock: Unix µs, stamped on successes and failures for status and persistence.
    /// - Throws: `RemoteConfigurationError` for a bad URL, interval, token or CA file.
    init(
        configuration: RemotePollerConfiguration, sink: any RemoteStateSink, logger: Logger,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) },
        wallClock: @escaping @Sendable () -> Int64 = { MonotonicClock.wallMicros() },
        logLimiter: LogRateLimiter = LogRateLimiter()
    ) throws {
        shared = Mutex(Shared(remote: try configuration.prepare()))
        self.logLimiter = logLimiter
        self.sink = sink
        self.logger = logger
        self.eventLoopGroup = eventLoopGroup
        self.random = random
        self.wallClock = wallClock
    }

    var counters: RemotePollerCounters { shared.withLock { $0.counters } }
    var configuration: RemotePollerConfiguration { shared.withLock { $0.remote.configuration } }
    /// The URL without credentials, for status.
    var endpointDescription: String { shared.withLock { $0.remote.endpoint.description } }

    /// `status.remote_poller`.
    var pollerStatus: RemotePollerStatus {
        let (counters, url) = shared.withLock { ($0.counters, $0.remote.endpoint.description) }
        return counters.status(url: url)
    }

    /// Applies new settings (SIGHUP) from the next poll on, which starts at once. On error the
    /// old settings stay in force.
    func update(_ configuration: RemotePollerConfiguration) throws {
        let prepared = try configuration.prepare()
        let changed = shared.withLock { state -> Bool in
            let changed = state.remote.configuration != configuration
            state.remote = prepared
            // Files behind an unchanged path may have changed: always rebuild the client.
            state.clientIsStale = true
            return changed
        }
        if changed { logger.info("remote poller reconfigured", metadata: ["url": "\(prepared.endpoint)"]) }
        wakeup.signal()
    }

    func run() async throws {
        logger.info(
            "remote poller started",
            metadata: [
                "url": "\(endpointDescription)",
                "poll_interval_s": "\(RemoteFailure.seconds(configuration.pollInterval))",
            ])
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    let delay = try await self.pollOnce()
                    await self.wakeup.sleep(for: delay)
                } catch {
                    break // cancelled
                }
            }
        }
        await shutdownClient()
        logger.debug("remote poller stopped")
    }

    /// One poll: fetch, count, log a transition, deliver. Returns the delay before the next
    /// poll. Not reentrant: `run()` is the only caller (tests drive it by hand).
    func pollOnce() async throws -> Duration {
        let started = ContinuousClock.now
        let (remote, client) = await currentClient()
        let result = try await RemoteFetcher.fetch(remote, client: client)
        let wall = wallClock()
        let interval = remote.configuration.pollInterval
        switch result {
        case .success(let snapshot):
            recordSuccess(at: wall, url: remote.endpoint)
            await sink.remoteFetched(snapshot, wallMicros: wall)
            let elapsed = ContinuousClock.now - started
            return max(.zero, interval - elapsed)
        case .failure(let failure):
            let staleAfter = remote.configuration.staleAfter
            let cap = RemoteBackoff.cap(interval: interval, staleAfter: staleAfter)
            let failures = recordFailure(failure, at: wall, url: remote.endpoint, backoffCap: cap)
            await sink.remoteFailed(failure)
            return RemoteBackoff.delay(
                afterFailures: failures, interval: interval, staleAfter: staleAfter,
                random: random())
        }
    }

    /// Shuts the HTTP client down (after `run()` it already is).
    func shutdownClient() async {
        let client = shared.withLock { state -> HTTPClient? in
            defer { state.client = nil }
            return state.client
        }
        try? await client?.shutdown()
    }

    // MARK: Private

    private func currentClient() async -> (PreparedRemote, HTTPClient?) {
        let (remote, stale) = shared.withLock { state -> (PreparedRemote, HTTPClient?) in
            guard state.clientIsStale else { return (state.remote, nil) }
            state.clientIsStale = false
            defer { state.client = nil }
            return (state.remote, state.client)
        }
        try? await stale?.shutdown()
        guard case .http = remote.endpoint else { return (remote, nil) }
        return shared.withLock { state in
            if state.client == nil { state.client = state.remote.makeHTTPClient(eventLoopGroup: eventLoopGroup) }
            return (state.remote, state.client)
        }
    }

    private func recordSuccess(at wall: Int64, url: RemoteEndpoint) {
        let (previous, failures, since, first) = shared.withLock { state in
            let result = (
                state.failingKind, state.counters.consecutiveFailures, state.failingSinceWallMicros,
                !state.everSucceeded
            )
            state.counters.polls += 1
            state.counters.successes += 1
            state.counters.consecutiveFailures = 0
            state.counters.lastSuccessWallMicros = wall
            state.failingKind = nil
            state.failingSinceWallMicros = nil
            state.everSucceeded = true
            return result
        }
        if let previous {
            let seconds = since.map { Double(wall - $0) / 1_000_000 } ?? 0
            logger.limited(
                limiter: logLimiter, .info, "remote.fetch", "remote state fetch recovered",
                metadata: [
                    "url": "\(url)", "failed_polls": "\(failures)", "last_error_kind": "\(previous.rawValue)",
                    "failing_for_s": "\(Int(seconds.rounded()))",
                ])
        } else if first {
            logger.info("remote state fetched", metadata: ["url": "\(url)"])
        } else {
            logger.debug("remote state fetched", metadata: ["url": "\(url)"])
        }
    }

    /// Counts the failure and logs it if its kind is new; returns the consecutive failures.
    private func recordFailure(
        _ failure: RemoteFailure, at wall: Int64, url: RemoteEndpoint,
        backoffCap: Duration
    ) -> Int {
        let (previous, failures) = shared.withLock { state in
            let previous = state.failingKind
            state.counters.polls += 1
            state.counters.failures[failure.kind, default: 0] += 1
            state.counters.consecutiveFailures += 1
            state.counters.lastError = failure
            state.counters.lastErrorWallMicros = wall
            state.failingKind = failure.kind
            if previous == nil { state.failingSinceWallMicros = wall }
            return (previous, state.counters.consecutiveFailures)
        }
        let reason = TerminalText.logged(failure.reason)
        var metadata: Logger.Metadata = ["url": "\(url)", "kind": "\(failure.kind.rawValue)"]
        switch previous {
        case nil:
            let backoff = "backing off up to \(RemoteFailure.seconds(backoffCap)) s"
            logger.limited(
                limiter: logLimiter, .warning, "remote.fetch",
                "remote state fetch failing: \(reason); keeping the last good state, \(backoff)",
                metadata: metadata)
        case let previous? where previous != failure.kind:
            metadata["previous_kind"] = "\(previous.rawValue)"
            logger.limited(
                limiter: logLimiter, .warning, "remote.fetch",
                "remote state fetch still failing, now: \(reason)", metadata: metadata)
        default:
            metadata["consecutive_failures"] = "\(failures)"
            logger.limited(
                limiter: logLimiter, .debug, "remote.fetch",
                "remote state fetch failed: \(reason)", metadata: metadata)
        }
        return failures
    }
}

/// A sleep that `signal()` cuts short. A signal while nobody sleeps makes the next sleep return
/// at once. Cancellation also ends the sleep.
final class PollWakeup: Sendable {
    private struct State {
        var pending = false
        var waiter: (id: UInt64, continuation: CheckedContinuation<Void, Never>)?
        var nextID: UInt64 = 0
    }

    private let state = Mutex(State())

    func signal() {
        let continuation = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.pending = true
                return nil
            }
            state.waiter = nil
            return waiter.continuation
        }
        continuation?.resume()
    }

    /// Returns after `duration`, on `signal()`, or on cancellation, whichever comes first.
    func sleep(for duration: Duration) async {
        guard duration > .zero else { return }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await Task.sleep(for: duration) }
            group.addTask { await self.waitForSignal() }
            await group.next()
            group.cancelAll()
        }
    }

    private func waitForSignal() async {
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.pending {
                        state.pending = false
                        return true
                    }
                    if Task.isCancelled { return true }
                    state.waiter = (id, continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let continuation = state.withLock { state -> CheckedContinuation<Void, Never>? in
                guard let waiter = state.waiter, waiter.id == id else { return nil }
                state.waiter = nil
                return waiter.continuation
            }
            continuation?.resume()
        }
    }
}
