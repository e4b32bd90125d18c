import NIOCore

extension EventLoop {
    /// Returns after `delay`, timed by a task scheduled on this loop: no thread sleeps for it.
    /// Throws `CancellationError` at once when the calling task is cancelled (or the loop shuts
    /// down). The one way async code in beacond waits out time (docs/threads.md).
    package func wait(for delay: TimeAmount) async throws {
        try Task.checkCancellation()
        guard delay > .zero else { return }
        let scheduled = scheduleTask(in: delay) {}
        do {
            try await withTaskCancellationHandler {
                try await scheduled.futureResult.get()
            } onCancel: {
                scheduled.cancel()
            }
        } catch {
            throw CancellationError()
        }
    }

    /// `wait(for:)` with a `Duration` (NIO's conversion: nanoseconds, clamped).
    package func wait(for duration: Duration) async throws {
        try await wait(for: TimeAmount(duration))
    }
}
