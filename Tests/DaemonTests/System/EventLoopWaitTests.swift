import NIOCore
import NIOPosix
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// `EventLoop.wait(for:)`: async code waits out time on a loop's scheduled task, and a
/// cancelled task stops waiting at once.
@Suite struct EventLoopWaitTests {
    @Test func waitsAtLeastTheDelay() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let started = ContinuousClock.now
        try await group.next().wait(for: .milliseconds(30))
        #expect(ContinuousClock.now - started >= .milliseconds(30))
        try await group.next().wait(for: Duration.milliseconds(20))
        #expect(ContinuousClock.now - started >= .milliseconds(50))
        // Nothing to wait: returns at once.
        try await group.next().wait(for: TimeAmount.zero)
        try await group.shutdownGracefully()
    }

    @Test func cancellationEndsTheWaitAtOnce() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let waiting = Task { try await loop.wait(for: .seconds(30)) }
        try await loop.wait(for: .milliseconds(20))
        let cancelled = ContinuousClock.now
        waiting.cancel()
        let outcome = await waiting.result
        #expect(ContinuousClock.now - cancelled < .seconds(5))
        #expect(throws: CancellationError.self) { try outcome.get() }
        // Already cancelled: throws before scheduling anything.
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await loop.wait(for: .seconds(30))
        }
        await #expect(throws: CancellationError.self) { try await early.value }
        try await group.shutdownGracefully()
    }
}
