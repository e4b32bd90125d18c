import Glibc
import NIOCore
import ServiceLifecycle
import Synchronization

/// The one way a blocking loop (a scanner's reader, which waits in poll(2) or libdbus; a client's
/// feed; MQTT's network loop) runs on a POSIX thread of its own. The loop never occupies one of
/// Swift concurrency's cooperative threads. Sources start threads only here (`make lint` checks).
///
/// Three forms, by how the owner stops the loop:
/// - a service or task awaits its end (`run`, `awaitEnd`): graceful shutdown or task
///   cancellation calls `stop`, which must make the loop return soon; the loop's error is rethrown;
/// - an owner started and stopped through futures (`start(on:)`);
/// - an owner with a synchronous start and stop (`detach`, `joinable`): the kiosk's feed, the HCI
///   reader (whose completion the scanner's `run` awaits), MQTT's network thread (joined at stop).
package enum BlockingThreadBridge {
    /// Starts `body` on a new detached thread and returns when it has returned.
    package static func run(stop: @escaping @Sendable () -> Void, _ body: @escaping @Sendable () throws -> Void)
        async throws
    {
        try await awaitEnd(stop: stop) { finished in
            do throws(PosixThread.StartError) {
                try detach { finished(Result { try body() }) }
            } catch {
                finished(.failure(error))
            }
        }
    }

    /// Starts `body` on a new detached thread for an owner whose own `stop` makes it return.
    @discardableResult
    package static func detach(_ body: @escaping @Sendable () -> Void) throws(PosixThread.StartError) -> pthread_t {
        try PosixThread.start(detached: true, body).handle
    }

    /// Starts `body` on a new thread that its owner joins (`PosixThread.join`) after stopping it.
    package static func joinable(_ body: @escaping @Sendable () -> Void) throws(PosixThread.StartError) -> PosixThread {
        try PosixThread.start(detached: false, body)
    }

    /// Starts `body` on a new detached thread for an owner that is started and stopped through
    /// futures rather than as a service (the socket server's accept loop): the future completes
    /// on `loop` when `body` has returned. The owner's stop makes `body` return.
    package static func start(on loop: EventLoop, _ body: @escaping @Sendable () throws -> Void)
        -> EventLoopFuture<Void>
    {
        let promise = loop.makePromise(of: Void.self)
        do throws(PosixThread.StartError) {
            try detach { promise.completeWith(Result { try body() }) }
        } catch {
            promise.fail(error)
        }
        return promise.futureResult
    }

    /// Calls `start`, which starts the thread (or reports why it could not) and arranges for
    /// `finished` to be called when the loop ends, then waits for that call. Only the first call
    /// of `finished` counts.
    package static func awaitEnd(
        stop: @escaping @Sendable () -> Void,
        start: (_ finished: @escaping @Sendable (Result<Void, any Error>) -> Void) -> Void
    ) async throws {
        let completion = ThreadCompletion()
        start { completion.finish($0) }
        let result = await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                await completion.wait()
            } onGracefulShutdown: {
                stop()
            }
        } onCancel: {
            stop()
        }
        try result.get()
    }
}

/// A thread's result, handed from the thread to the one task awaiting it, in either order.
private final class ThreadCompletion: Sendable {
    private struct State {
        var result: Result<Void, any Error>?
        var waiter: CheckedContinuation<Result<Void, any Error>, Never>?
    }

    private let state = Mutex(State())

    func finish(_ result: Result<Void, any Error>) {
        let waiter = state.withLock { state -> CheckedContinuation<Result<Void, any Error>, Never>? in
            guard state.result == nil else { return nil }
            state.result = result
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: result)
    }

    func wait() async -> Result<Void, any Error> {
        await withCheckedContinuation { continuation in
            let finished = state.withLock { state -> Result<Void, any Error>? in
                if let result = state.result { return result }
                state.waiter = continuation
                return nil
            }
            if let finished { continuation.resume(returning: finished) }
        }
    }
}
