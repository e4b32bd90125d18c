import CircuitState
import NIOCore
import NIOEmbedded
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// The one coalescer (socket beacon updates, MQTT sightings, systemd's status line), on
/// `EmbeddedEventLoop` time: the cases its three former versions were tested with.
@Suite struct KeyedCoalescerTests {
    /// A coalescer on an embedded loop that records what it emits, with the loop time in µs.
    final class Harness<Key: Hashable, Value> {
        let loop = EmbeddedEventLoop()
        var emitted: [(key: Key, value: Value, atOnce: Bool, at: Int64)] = []
        var coalescer: KeyedCoalescer<Key, Value>!

        init(interval: TimeAmount, maxKeys: Int = 4096) {
            coalescer = KeyedCoalescer(eventLoop: loop, interval: interval, maxKeys: maxKeys) {
                [unowned self] key, value, atOnce in
                emitted.append((key, value, atOnce, Int64(loop.now.uptimeNanoseconds / 1000)))
            }
        }

        /// Moves the loop's clock to `micros` from its start, running what falls due.
        func advance(to micros: Int64) {
            let now = Int64(loop.now.uptimeNanoseconds / 1000)
            loop.advanceTime(by: .microseconds(micros - now))
        }

        func offer(_ value: Value, for key: Key, at micros: Int64) -> KeyedCoalescer<Key, Value>.Outcome {
            advance(to: micros)
            return coalescer.offer(value, for: key)
        }
    }

    /// (StatusLineThrottle's case.) A lone line goes at once; in a storm only the latest goes, at
    /// the end of the interval; the held line's emission starts the next interval; after a quiet
    /// spell a line goes at once again.
    @Test func aLoneValueGoesAtOnceAndAStormSendsOnlyTheLatestAtTheEndOfTheWindow() {
        let harness = Harness<Int, String>(interval: .microseconds(1_000_000))
        #expect(harness.offer("a", for: 0, at: 0) == .emitted)
        #expect(harness.offer("b", for: 0, at: 100) == .held)
        #expect(harness.offer("c", for: 0, at: 200) == .held)
        #expect(harness.offer("d", for: 0, at: 300) == .held)
        #expect(harness.emitted.map(\.value) == ["a"])
        harness.advance(to: 999_999)
        #expect(harness.emitted.map(\.value) == ["a"])
        harness.advance(to: 1_000_000)
        #expect(harness.emitted.map(\.value) == ["a", "d"])
        #expect(harness.emitted.last?.atOnce == false && harness.emitted.last?.at == 1_000_000)
        harness.advance(to: 1_000_001)
        #expect(harness.emitted.count == 2)
        #expect(harness.offer("e", for: 0, at: 1_500_000) == .held)
        harness.advance(to: 2_000_000)
        #expect(harness.emitted.map(\.value) == ["a", "d", "e"])
        #expect(harness.offer("f", for: 0, at: 3_000_001) == .emitted)
        #expect(harness.coalescer.heldCount == 0)
    }

    /// (StatusLineThrottle's case.) An offer after the window goes at once and drops a held value
    /// whose emission is late: the late emission then finds nothing.
    @Test func aValueAfterTheWindowGoesAtOnceAndDropsALateHeldOne() {
        let harness = Harness<Int, String>(interval: .microseconds(10))
        #expect(harness.offer("a", for: 0, at: 0) == .emitted)
        // Due at 10 as well and scheduled before the window's end, so it runs first: as an offer
        // that comes while the window's end is late.
        var outcome: KeyedCoalescer<Int, String>.Outcome?
        harness.loop.scheduleTask(deadline: harness.loop.now + .microseconds(10)) {
            outcome = harness.coalescer.offer("c", for: 0)
        }
        #expect(harness.offer("b", for: 0, at: 5) == .held)
        harness.advance(to: 20)
        #expect(outcome == .emitted)
        #expect(harness.emitted.map(\.value) == ["a", "c"])
        #expect(harness.emitted.allSatisfy { $0.atOnce })
    }

    /// (SightingCoalescer's case.) Keys have windows of their own; a held key is emitted once.
    @Test func keysHaveWindowsOfTheirOwn() {
        let harness = Harness<String, Int>(interval: .microseconds(1_000_000))
        #expect(harness.offer(1, for: "a", at: 0) == .emitted)
        #expect(harness.offer(2, for: "b", at: 100) == .emitted)
        #expect(harness.offer(3, for: "a", at: 200_000) == .held)
        #expect(harness.offer(4, for: "a", at: 300_000) == .held)
        harness.advance(to: 1_000_001)
        #expect(harness.emitted.map(\.key) == ["a", "b", "a"])
        #expect(harness.emitted.last?.value == 4 && harness.emitted.last?.at == 1_000_000)
        #expect(harness.offer(5, for: "a", at: 1_500_000) == .held)
        #expect(harness.offer(6, for: "b", at: 1_000_100) == .emitted)
    }

    /// (SightingCoalescer's case.) Bounded: a full table refuses; once windows have passed, the
    /// old keys are forgotten and there is room again.
    @Test func theTableIsBounded() {
        let harness = Harness<Int, Int>(interval: .microseconds(1_000_000), maxKeys: 2)
        #expect(harness.offer(0, for: 1, at: 0) == .emitted)
        #expect(harness.offer(0, for: 2, at: 0) == .emitted)
        #expect(harness.offer(0, for: 3, at: 10) == .refused)
        #expect(harness.offer(0, for: 3, at: 2_000_000) == .emitted)
        #expect(harness.coalescer.rememberedKeys == 1)
    }

    /// A key with a value held is never forgotten to make room: its value still goes out.
    @Test func aHeldValueIsNeverForgotten() {
        let harness = Harness<Int, Int>(interval: .microseconds(1_000_000), maxKeys: 1)
        #expect(harness.offer(1, for: 1, at: 0) == .emitted)
        #expect(harness.offer(2, for: 1, at: 10) == .held)
        #expect(harness.offer(3, for: 2, at: 20) == .refused)
        harness.advance(to: 1_000_000)
        #expect(harness.emitted.map(\.value) == [1, 2])
    }
}
