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
///   recovery once, each transition at most once a minute (`RemoteHealthLogGate`: a flapping API
///   does not flood the log); every poll is logged at debug level only.
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
        /// One health line per transition per minute.
        var healthLog = RemoteHealthLogGate()
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
                    await self.wakeup.wait(for: delay, on: self.eventLoopGroup.next())
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
        let now = logLimiter.clock()
        let (previous, failures, since, first, gate) = shared.withLock { state in
            let result = (
                state.failingKind, state.counters.consecutiveFailures, state.failingSinceWallMicros,
                !state.everSucceeded
            )
            let gate: HealthLine
            if let previous = state.failingKind {
                let transition = RemoteHealthLogGate.Transition(from: .failing(previous), to: .healthy)
                gate = state.healthLog.admit(transition, at: now).map(HealthLine.write) ?? .heldBack
            } else {
                gate = state.healthLog.takeOwed(at: now).map { .owed($0.transition, $0.heldBack) } ?? .none
            }
            state.counters.polls += 1
            state.counters.successes += 1
            state.counters.consecutiveFailures = 0
            state.counters.lastSuccessWallMicros = wall
            state.failingKind = nil
            state.failingSinceWallMicros = nil
            state.everSucceeded = true
            return (result.0, result.1, result.2, result.3, gate)
        }
        if let previous {
            guard case .write(let heldBack) = gate else {
                logger.debug("remote state fetch recovered (line held back)", metadata: ["url": "\(url)"])
                return
            }
            let seconds = since.map { Double(wall - $0) / 1_000_000 } ?? 0
            var metadata: Logger.Metadata = [
                "url": "\(url)", "failed_polls": "\(failures)", "last_error_kind": "\(previous.rawValue)",
                "failing_for_s": "\(Int(seconds.rounded()))",
            ]
            if heldBack > 0 { metadata["transitions_held_back"] = "\(heldBack)" }
            logger.limited(
                limiter: logLimiter, .info, "remote.fetch", "remote state fetch recovered", metadata: metadata)
        } else if case .owed(let transition, let heldBack) = gate {
            logOwed(transition, heldBack: heldBack, url: url, reason: nil)
        } else if first {
            logger.info("remote state fetched", metadata: ["url": "\(url)"])
        } else {
            logger.debug("remote state fetched", metadata: ["url": "\(url)"])
        }
    }

    /// What to do with the health line of one poll.
    private enum HealthLine {
        /// Write the transition's line, reporting the transitions held back before it.
        case write(heldBack: Int)
        /// A transition whose line is held back (written less than a minute ago).
        case heldBack
        /// No transition, but the current health's held-back line is due.
        case owed(RemoteHealthLogGate.Transition, Int)
        /// No transition, nothing due.
        case none
    }

    /// The line of the current health, held back within its minute and written now.
    private func logOwed(
        _ transition: RemoteHealthLogGate.Transition, heldBack: Int, url: RemoteEndpoint, reason: String?
    ) {
        var metadata: Logger.Metadata = ["url": "\(url)", "transitions_held_back": "\(heldBack)"]
        if case .failing(let kind) = transition.from { metadata["last_error_kind"] = "\(kind.rawValue)" }
        switch transition.to {
        case .healthy:
            logger.limited(
                limiter: logLimiter, .info, "remote.fetch",
                "remote state fetch recovered, after health transitions held back in the last minute",
                metadata: metadata)
        case .failing(let kind):
            let held = "transitions held back in the last minute"
            metadata["kind"] = "\(kind.rawValue)"
            if case .failing(let previous) = transition.from { metadata["previous_kind"] = "\(previous.rawValue)" }
            metadata["last_error_kind"] = nil
            logger.limited(
                limiter: logLimiter, .warning, "remote.fetch",
                "remote state fetch failing: \(reason ?? kind.rawValue), after \(held)",
                metadata: metadata)
        }
    }

    /// Counts the failure and logs it if its kind is new; returns the consecutive failures.
    private func recordFailure(
        _ failure: RemoteFailure, at wall: Int64, url: RemoteEndpoint,
        backoffCap: Duration
    ) -> Int {
        let now = logLimiter.clock()
        let (previous, failures, gate) = shared.withLock { state in
            let previous = state.failingKind
            let gate: HealthLine
            if previous != failure.kind {
                let from = previous.map(RemoteHealthLogGate.Health.failing) ?? .healthy
                let transition = RemoteHealthLogGate.Transition(from: from, to: .failing(failure.kind))
                gate = state.healthLog.admit(transition, at: now).map(HealthLine.write) ?? .heldBack
            } else {
                gate = state.healthLog.takeOwed(at: now).map { .owed($0.transition, $0.heldBack) } ?? .none
            }
            state.counters.polls += 1
            state.counters.failures[failure.kind, default: 0] += 1
            state.counters.consecutiveFailures += 1
            state.counters.lastError = failure
            state.counters.lastErrorWallMicros = wall
            state.failingKind = failure.kind
            if previous == nil { state.failingSinceWallMicros = wall }
            return (previous, state.counters.consecutiveFailures, gate)
        }
        let reason = TerminalText.logged(failure.reason)
        var metadata: Logger.Metadata = ["url": "\(url)", "kind": "\(failure.kind.rawValue)"]
        switch (previous, gate) {
        case (_, .heldBack):
            metadata["consecutive_failures"] = "\(failures)"
            logger.debug("remote state fetch failed (line held back): \(reason)", metadata: metadata)
        case (nil, .write(let heldBack)):
            if heldBack > 0 { metadata["transitions_held_back"] = "\(heldBack)" }
            let backoff = "backing off up to \(RemoteFailure.seconds(backoffCap)) s"
            logger.limited(
                limiter: logLimiter, .warning, "remote.fetch",
                "remote state fetch failing: \(reason); keeping the last good state, \(backoff)",
                metadata: metadata)
        case (let previous?, .write(let heldBack)):
            if heldBack > 0 { metadata["transitions_held_back"] = "\(heldBack)" }
            metadata["previous_kind"] = "\(previous.rawValue)"
            logger.limited(
                limiter: logLimiter, .warning, "remote.fetch",
                "remote state fetch still failing, now: \(reason)", metadata: metadata)
        case (_, .owed(let transition, let heldBack)):
            logOwed(transition, heldBack: heldBack, url: url, reason: reason)
        case (_, .none):
            metadata["consecutive_failures"] = "\(failures)"
            logger.limited(
                limiter: logLimiter, .debug, "remote.fetch",
                "remote state fetch failed: \(reason)", metadata: metadata)
        }
        return failures
    }
}

extension RemoteStatePoller: StatusContributor {
    func contribute(to status: inout StatusMessage, for query: StatusQuery) { status.remotePoller = pollerStatus }
}
