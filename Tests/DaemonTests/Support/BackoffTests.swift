import Testing

@testable import BeacondClient
@testable import BeacondCore

@Suite struct BackoffTests {
    @Test func doublesFromTheFloorUpToTheCap() {
        var backoff = Backoff(floor: 1_000_000, cap: 30_000_000)
        let delays = (0..<8).map { _ in backoff.failed() }
        #expect(delays == [1_000_000, 2_000_000, 4_000_000, 8_000_000, 16_000_000, 30_000_000, 30_000_000, 30_000_000])
        #expect(backoff.failures == 8)
        #expect(backoff.delay(afterFailures: 0) == 1_000_000)
        #expect(backoff.delay(afterFailures: 1) == 1_000_000)
    }

    @Test func aSuccessStartsOverAtTheFloor() {
        var backoff = Backoff(floor: 200_000, cap: 800_000)
        _ = backoff.failed()
        _ = backoff.failed()
        #expect(backoff.failed() == 800_000)
        backoff.succeeded()
        #expect(backoff.failures == 0)
        #expect(backoff.failed() == 200_000)
        #expect(backoff.failed() == 400_000)
    }

    @Test func absurdSettingsAndCountsSaturateInsteadOfTrapping() {
        let huge = Backoff(floor: .max / 3, cap: .max)
        #expect(huge.delay(afterFailures: 2) == .max / 3 * 2)
        #expect(huge.delay(afterFailures: 3) == .max)
        #expect(huge.delay(afterFailures: .max) == .max)
        #expect(Backoff(floor: 1, cap: .max).delay(afterFailures: .max) == 1 << 62)
        // A floor above the cap is lowered to it; negative settings count as zero.
        #expect(Backoff(floor: 50, cap: 10).delay(afterFailures: 1) == 10)
        #expect(Backoff(floor: -5, cap: -1).delay(afterFailures: 4) == 0)
        var counting = Backoff(floor: 1, cap: 4)
        for _ in 0..<70 { _ = counting.failed() }
        #expect(counting.failed() == 4)
    }

    @Test func jitterShortensWithinFloorAndCapButNeverTheFloor() {
        let backoff = Backoff(floor: 1_000_000, cap: 30_000_000, jitter: 0.25)
        // The floor itself is never shortened.
        #expect(backoff.delay(afterFailures: 1, random: 0.999) == 1_000_000)
        #expect(backoff.delay(afterFailures: 3, random: 0) == 4_000_000)
        #expect(backoff.delay(afterFailures: 3, random: 0.5) == 3_500_000)
        #expect(backoff.delay(afterFailures: 2, random: 1) == 1_500_000)
        // Out-of-range randoms are clamped, NaN counts as no jitter.
        #expect(backoff.delay(afterFailures: 3, random: 7) == 3_000_000)
        #expect(backoff.delay(afterFailures: 3, random: -1) == 4_000_000)
        #expect(backoff.delay(afterFailures: 3, random: .nan) == 4_000_000)
        var spread = Set<Int64>()
        for step in 0..<100 {
            let delay = backoff.delay(afterFailures: 9, random: Double(step) / 100)
            #expect(delay >= 22_500_000 && delay <= 30_000_000)
            spread.insert(delay)
        }
        #expect(spread.count > 50)
        // A jitter outside [0, 1] is clamped.
        #expect(Backoff(floor: 1, cap: 100, jitter: 5).jitter == 1)
        #expect(Backoff(floor: 1, cap: 100, jitter: .infinity).jitter == 0)
    }

    /// The remote poller's policy: its cap never exceeds stale_after / 3 (issue 9).
    @Test func theRemotePolicyIsCappedAtAThirdOfStaleAfter() {
        let policy = RemoteBackoff.policy(interval: .seconds(5), staleAfter: .seconds(15))
        #expect(policy.floor == 5_000_000)
        #expect(policy.cap == 5_000_000)
        #expect(policy.jitter == RemoteBackoff.jitterFraction)
        let slow = RemoteBackoff.policy(interval: .seconds(1), staleAfter: .seconds(60))
        #expect(slow.cap == 6_000_000)
        #expect(RemoteBackoff.micros(.seconds(Int64.max)) == .max)
        #expect(RemoteBackoff.micros(.milliseconds(-3)) == 0)
        #expect(RemoteBackoff.micros(.nanoseconds(2_500)) == 2)
    }
}
