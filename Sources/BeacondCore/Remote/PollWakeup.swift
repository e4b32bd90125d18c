import NIOCore
import Synchronization

/// A wait that `signal()` cuts short. A signal while nobody waits makes the next wait return at
/// once. Cancellation also ends the wait.
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
    func wait(for duration: Duration, on loop: any EventLoop) async {
        guard duration > .zero else { return }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await loop.wait(for: duration) }
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
