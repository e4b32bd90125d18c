import Glibc
import Synchronization

/// A display's line to the daemon (the kiosks use it): connects, follows every `state`, pings
/// when the line has been quiet for `pingInterval` and calls the daemon lost when no answer comes
/// within `replyTimeout`, and reconnects with a backoff (250 ms doubling to `maxBackoff`) whenever
/// the daemon goes away. It never gives up.
///
/// It runs a thread of its own, blocking in poll(2); `onEvent` is called on that thread, in order.
package final class TrackStateFeed: Sendable {
    package enum Event: Sendable, Equatable {
        /// Connected: the state the daemon greeted with.
        case connected(StateMessage)
        /// A new state pushed by the daemon.
        case state(StateMessage)
        /// The daemon went away or could not be reached (again): why, in words.
        case lost(reason: String)
    }

    package struct Configuration: Sendable {
        package var path: String
        /// Seconds of silence before the feed asks the daemon for a `pong`.
        package var pingInterval: Double = 5
        /// Seconds the daemon has to answer the greeting and a ping.
        package var replyTimeout: Double = 5
        /// The longest wait between two connection attempts, microseconds.
        package var maxBackoff: Int64 = 2_000_000

        package init(path: String) {
            self.path = path
        }
    }

    private let configuration: Configuration
    private let onEvent: @Sendable (Event) -> Void
    private let stopped = Atomic<Bool>(false)
    /// Ends the thread's waits (a read, the pause before reconnecting) at `stop()`; a failure to
    /// make it is reported by `start()`.
    private let stopSignal: Result<WakeSignal, WakeSignal.Failure>
    /// How long one read waits before the feed looks at its ping schedule, seconds.
    private static let wakeInterval = 0.25

    package init(configuration: Configuration, onEvent: @escaping @Sendable (Event) -> Void) {
        self.configuration = configuration
        self.onEvent = onEvent
        stopSignal = Result { () throws(WakeSignal.Failure) in try WakeSignal() }
    }

    /// Starts the feed's thread.
    package func start() throws(PosixThread.StartError) {
        guard case .success(let signal) = stopSignal else {
            if case .failure(let failure) = stopSignal { throw PosixThread.StartError(code: failure.errno) }
            return
        }
        try BlockingThreadBridge.detach { [self] in run(stopSignal: signal) }
    }

    /// Asks the thread to end; it does at once, without another event.
    package func stop() {
        stopped.store(true, ordering: .relaxed)
        if case .success(let signal) = stopSignal { signal.signal() }
    }

    private var isStopped: Bool { stopped.load(ordering: .relaxed) }

    private func run(stopSignal: WakeSignal) {
        var backoff = Backoff(floor: 250_000, cap: max(250_000, configuration.maxBackoff))
        while !isStopped {
            do {
                try follow(stopSignal: stopSignal) { backoff.succeeded() }
            } catch {
                if isStopped { return }
                onEvent(.lost(reason: Self.describe(error)))
            }
            stopSignal.wait(micros: backoff.failed())
        }
    }

    /// The daemon's state once, as the feed's first event would be (`kiosk --once`): `.connected`
    /// with the state it greets with, or `.lost` with why, in words.
    package static func snapshot(path: String, timeout: Double = 5) -> Event {
        do throws(TrackStateClient.ClientError) {
            let client = try TrackStateClient(path: path, timeout: timeout)
            defer { client.close() }
            return .connected(try greeting(of: client, timeout: timeout))
        } catch {
            return .lost(reason: describe(error))
        }
    }

    /// Reads the greeting, hello then the state, and returns the state.
    private static func greeting(of client: TrackStateClient, timeout: Double) throws(TrackStateClient.ClientError)
        -> StateMessage
    {
        guard case .hello = try client.readServerMessage(timeout: timeout),
            case .state(let greeting) = try client.readServerMessage(timeout: timeout)
        else { throw .unreadable(path: client.path, type: "hello", reason: "the greeting is not hello and state") }
        return greeting
    }

    /// One connection, from connect to loss. `connected` is called once the greeting was read.
    private func follow(stopSignal: WakeSignal, connected: () -> Void) throws(TrackStateClient.ClientError) {
        let path = configuration.path
        let client = try TrackStateClient(path: path, timeout: configuration.replyTimeout)
        client.stopSignal = stopSignal
        defer { client.close() }
        let greeting = try Self.greeting(of: client, timeout: configuration.replyTimeout)
        connected()
        onEvent(.connected(greeting))
        var heardAt = MonotonicClock.micros()
        var pingedAt: Int64?
        while !isStopped {
            let message: ServerMessage
            do {
                message = try client.readServerMessage(timeout: Self.wakeInterval)
            } catch .timedOut {
                let now = MonotonicClock.micros()
                if let pingedAt {
                    if now - pingedAt > Self.micros(configuration.replyTimeout) {
                        throw .timedOut(path: path, waiting: "an answer to ping")
                    }
                } else if now - heardAt >= Self.micros(configuration.pingInterval) {
                    try client.send(.ping)
                    pingedAt = now
                }
                continue
            }
            heardAt = MonotonicClock.micros()
            pingedAt = nil
            switch message {
            case .state(let state): onEvent(.state(state))
            case .bye: throw .closed(path: path)
            default: break
            }
        }
    }

    private static func micros(_ seconds: Double) -> Int64 { Int64(seconds * 1_000_000) }

    private static func describe(_ error: TrackStateClient.ClientError) -> String {
        switch error {
        case .closed: "the daemon closed the connection"
        case .cannotConnect(_, let code) where code == ENOENT || code == ECONNREFUSED:
            "the daemon is not running (nobody listens on the socket)"
        case .timedOut(_, let waiting): "no answer from the daemon (waited for \(waiting))"
        default: "\(error)"
        }
    }
}
