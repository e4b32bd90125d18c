import BeacondCore
import Glibc

/// Condition waits: each polls its condition until it holds or a generous deadline passes (the
/// deadline only ends a test that would otherwise hang; a passing test returns as soon as the
/// condition holds). The async form sleeps with `Task.sleep`, so a waiting test never blocks a
/// cooperative thread other tests need; the blocking form is for tests that already run outside
/// Swift concurrency (threads, or the end-to-end tests' synchronous process handling).
package func waitUntil(
    within seconds: Double = 5, every interval: Duration = .milliseconds(1),
    _ condition: () -> Bool
) async -> Bool {
    let deadline = MonotonicClock.micros() + Int64(seconds * 1_000_000)
    while !condition() {
        if MonotonicClock.micros() >= deadline { return condition() }
        try? await Task.sleep(for: interval)
    }
    return true
}

/// The blocking form of `waitUntil`: polls every `intervalMicros` on the calling thread.
package func blockingWaitUntil(
    within seconds: Double = 5, intervalMicros: UInt32 = 10_000,
    _ condition: () -> Bool
) -> Bool {
    let deadline = MonotonicClock.micros() + Int64(seconds * 1_000_000)
    while !condition() {
        if MonotonicClock.micros() >= deadline { return condition() }
        usleep(intervalMicros)
    }
    return true
}

/// The value `produce` returns first within `seconds`, or nil: for waits whose answer is a value.
package func waitForValue<Value>(
    within seconds: Double = 5, every interval: Duration = .milliseconds(1),
    _ produce: () -> Value?
) async -> Value? {
    var value: Value?
    _ = await waitUntil(within: seconds, every: interval) {
        value = produce()
        return value != nil
    }
    return value
}

/// Waits for an async operation's result up to `seconds`; nil when it has not ended by then.
package func result<Value: Sendable>(of task: Task<Value, Never>, within seconds: Double) async -> Value? {
    await withTaskGroup(of: Value?.self) { group in
        group.addTask { await task.value }
        group.addTask {
            try? await Task.sleep(for: .seconds(seconds))
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
}
