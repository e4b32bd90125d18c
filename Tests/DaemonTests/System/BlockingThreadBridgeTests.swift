import Glibc
import Synchronization
import Testing

@testable import BeacondClient
@testable import BeacondCore

@Suite struct BlockingThreadBridgeTests {
    struct LoopFailed: Error, Equatable {}

    final class Counter: Sendable {
        let value = Atomic<Int>(0)
        var count: Int { value.load(ordering: .relaxed) }
    }

    @Test func returnsWhenTheLoopReturnsAndRethrowsItsError() async throws {
        let ran = Counter()
        try await BlockingThreadBridge.run(stop: {}) { ran.value.add(1, ordering: .relaxed) }
        #expect(ran.count == 1)
        await #expect(throws: LoopFailed.self) {
            try await BlockingThreadBridge.run(stop: {}) { throw LoopFailed() }
        }
    }

    /// The loop blocks until `stop`; cancelling the awaiting task must reach it.
    @Test func cancellationStopsTheLoop() async throws {
        let stops = Counter()
        let stopSignal = try WakeSignal()
        let (started, start) = AsyncStream.makeStream(of: Void.self)
        let task = Task {
            try await BlockingThreadBridge.run(stop: {
                stops.value.add(1, ordering: .relaxed)
                stopSignal.signal()
            }) {
                start.yield()
                stopSignal.wait(micros: 10_000_000)
            }
        }
        // The loop runs, blocked on its stop signal, before the task is cancelled (awaited, so
        // no cooperative thread is held meanwhile).
        for await _ in started { break }
        task.cancel()
        try await task.value
        #expect(stops.count >= 1)
    }

    /// A result reported before anyone waits, and a second report, are both handled.
    @Test func anEarlyResultCountsAndOnlyTheFirstOne() async {
        await #expect(throws: LoopFailed.self) {
            try await BlockingThreadBridge.awaitEnd(stop: {}) { finished in
                finished(.failure(LoopFailed()))
                finished(.success(()))
            }
        }
    }
}
