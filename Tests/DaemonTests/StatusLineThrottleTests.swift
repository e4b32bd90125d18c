import Testing

@testable import BeacondCore

/// The systemd status line follows the state at most once a second, and never stays behind it.
@Suite struct StatusLineThrottleTests {
    @Test func aLoneLineGoesAtOnceAndAStormSendsOnlyTheLatestAtTheEndOfTheInterval() {
        var throttle = StatusLineThrottle(interval: 1_000_000)
        #expect(throttle.offer("a", at: 0) == .sendNow)
        #expect(throttle.offer("b", at: 100) == .sendAt(1_000_000))
        #expect(throttle.offer("c", at: 200) == .held)
        #expect(throttle.offer("d", at: 300) == .held)
        #expect(throttle.takeDue(at: 1_000_000) == "d")
        #expect(throttle.takeDue(at: 1_000_001) == nil)
        // The held line's send starts the next interval.
        #expect(throttle.offer("e", at: 1_500_000) == .sendAt(2_000_000))
        #expect(throttle.takeDue(at: 2_000_000) == "e")
        // After a quiet spell: at once again.
        #expect(throttle.offer("f", at: 3_000_001) == .sendNow)
        #expect(throttle.pending == nil)
    }

    @Test func aLineSentAtOnceDropsAnOlderHeldOne() {
        var throttle = StatusLineThrottle(interval: 10)
        #expect(throttle.offer("a", at: 0) == .sendNow)
        #expect(throttle.offer("b", at: 5) == .sendAt(10))
        // The scheduled send ran late; a new line at 20 goes at once and the scheduled one finds nothing.
        #expect(throttle.offer("c", at: 20) == .sendNow)
        #expect(throttle.takeDue(at: 21) == nil)
    }
}
