import BeacondTestSupport
import CircuitState
import Foundation
import Logging
import ServiceLifecycle
import Testing

@testable import BeacondClient
@testable import BeacondCore

@Suite struct RemoteBackoffTests {
    /// Long enough that `stale_after / 3` does not cap these tests' delays.
    static let longStaleAfter = Duration.seconds(3600)

    @Test func growsExponentiallyAndIsCappedAtSixIntervals() {
        let interval = Duration.seconds(5)
        let delays = (0...8).map {
            RemoteBackoff.delay(afterFailures: $0, interval: interval, staleAfter: Self.longStaleAfter, random: 0)
        }
        #expect(
            delays == [
                .seconds(5), .seconds(5), .seconds(10), .seconds(20), .seconds(30), .seconds(30),
                .seconds(30), .seconds(30), .seconds(30),
            ])
        #expect(
            RemoteBackoff.delay(
                afterFailures: .max, interval: interval, staleAfter: Self.longStaleAfter,
                random: 0) == .seconds(30))
    }

    @Test func jitterShortensButStaysWithinIntervalAndCap() {
        let interval = Duration.milliseconds(2500)
        func delay(_ failures: Int, _ random: Double) -> Duration {
            RemoteBackoff.delay(
                afterFailures: failures, interval: interval, staleAfter: Self.longStaleAfter,
                random: random)
        }
        var seen = Set<Duration>()
        for failures in 1...12 {
            for step in 0..<50 {
                let value = delay(failures, Double(step) / 50)
                #expect(value >= interval)
                #expect(value <= interval * 6)
                if failures >= 4 { seen.insert(value) }
            }
        }
        // Capped delays still spread (so pollers that failed together do not retry together).
        #expect(seen.count > 10)
        #expect(delay(3, 0.999_999) < .seconds(10))
        #expect(delay(3, 0.999_999) > .milliseconds(7499))
        // A broken random source cannot break the bounds.
        #expect(delay(9, .nan) == .seconds(15))
        #expect(delay(9, 7) >= interval)
    }

    /// Issue 9: with a 5 s interval the backoff reached 30 s, past `stale_after` (15 s).
    @Test func neverWaitsLongerThanAThirdOfStaleAfter() {
        for (interval, staleAfter) in [
            (Duration.seconds(5), Duration.seconds(15)), (.seconds(1), .seconds(15)),
            (.milliseconds(250), .seconds(2)), (.seconds(30), .seconds(15)),
            (.seconds(2), .seconds(60)),
        ] {
            let cap = staleAfter / 3
            #expect(RemoteBackoff.cap(interval: interval, staleAfter: staleAfter) <= cap)
            for failures in [0, 1, 2, 3, 4, 5, 8, 16, 64, .max] {
                for random in [0, 0.3, 0.999_999, .nan, -1, 7] {
                    let delay = RemoteBackoff.delay(
                        afterFailures: failures, interval: interval,
                        staleAfter: staleAfter, random: random)
                    #expect(delay <= cap, "\(interval) \(staleAfter) \(failures) \(random)")
                    // poll_interval stays the floor wherever it fits under the cap.
                    #expect(delay >= min(interval, cap), "\(interval) \(staleAfter) \(failures) \(random)")
                }
            }
        }
        // The defaults: a failing race control is retried every 5 s, no more slowly.
        let defaults = (1...10).map {
            RemoteBackoff.delay(afterFailures: $0, interval: .seconds(5), staleAfter: .seconds(15), random: 0.5)
        }
        #expect(defaults.allSatisfy { $0 == .seconds(5) })
        // Below 1 s intervals there is still room to back off, up to stale_after / 3.
        #expect(
            RemoteBackoff.delay(afterFailures: 3, interval: .seconds(1), staleAfter: .seconds(15), random: 0)
                == .seconds(4))
        #expect(
            RemoteBackoff.delay(afterFailures: 9, interval: .seconds(1), staleAfter: .seconds(15), random: 0)
                == .seconds(5))
        // An absurdly small stale_after cannot make the poller spin; an absurdly large one cannot trap.
        #expect(
            RemoteBackoff.delay(afterFailures: 9, interval: .seconds(5), staleAfter: .microseconds(1), random: 0)
                == RemoteBackoff.minimumDelay)
        #expect(
            RemoteBackoff.delay(
                afterFailures: 9, interval: .seconds(Int64.max / 8),
                staleAfter: .seconds(Int64.max / 4),
                random: 0) > .seconds(1_000_000))
    }
}

@Suite struct RemoteConfigurationTests {
    @Test func rejectsBadURLsAndSettings() throws {
        for url in [
            "ftp://example.com/state", "http:///state", "file://venue-server/state.json", "not a url", "state.json",
        ] {
            #expect(throws: RemoteConfigurationError.self, "\(url)") {
                try RemotePollerConfiguration(url: url).prepare()
            }
        }
        #expect(throws: RemoteConfigurationError.self) {
            try RemotePollerConfiguration(url: "http://127.0.0.1/", pollInterval: .zero).prepare()
        }
        #expect(throws: RemoteConfigurationError.self) {
            try RemotePollerConfiguration(url: "https://127.0.0.1/", caFile: "/nonexistent/ca.pem").prepare()
        }
        let prepared = try RemotePollerConfiguration(url: "file:///var/lib/state.json").prepare()
        #expect(prepared.endpoint == .file(path: "/var/lib/state.json"))
        #expect(prepared.tls == nil)
        let secure = try RemotePollerConfiguration(url: "https://user:pw@venue.example/api/state").prepare()
        #expect(secure.tls?.certificateVerification == .fullVerification)
        #expect(secure.endpoint.description == "https://venue.example/api/state")
    }

    @Test func tokenIsTrimmedAndMustBeOneHeaderSafeWord() throws {
        let directory = try RemoteTestTools.temporaryDirectory()
        let path = directory + "/token"
        try "  s3cr3t-token.abc\n\n".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(try RemotePollerConfiguration.readToken(from: path) == "s3cr3t-token.abc")
        for bad in ["two\r\nX-Injected: 1", "   \n", "with space"] {
            try bad.write(toFile: path, atomically: true, encoding: .utf8)
            #expect(throws: RemoteConfigurationError.self) { try RemotePollerConfiguration.readToken(from: path) }
        }
        #expect(throws: RemoteConfigurationError.self) {
            try RemotePollerConfiguration.readToken(from: directory + "/missing")
        }
    }
}

extension RemoteConfigurationTests {
    /// A token or CA file that is a device, a FIFO or huge is refused at once, never read without end.
    @Test func settingFilesAreRegularAndBounded() throws {
        let directory = try RemoteTestTools.temporaryDirectory()
        let big = directory + "/big"
        try Data(repeating: UInt8(ascii: "a"), count: RemotePollerConfiguration.maxTokenBytes + 1)
            .write(to: URL(fileURLWithPath: big))
        let tooBig = "the file is over \(RemotePollerConfiguration.maxTokenBytes) bytes"
        #expect(throws: RemoteConfigurationError(reason: "remote.bearer_token_file \(big): \(tooBig)")) {
            try RemotePollerConfiguration.readToken(from: big)
        }
        let device = "/dev/zero is a character device, not a regular file"
        #expect(throws: RemoteConfigurationError(reason: "remote.bearer_token_file: \(device)")) {
            try RemotePollerConfiguration.readToken(from: "/dev/zero")
        }
        #expect(throws: RemoteConfigurationError(reason: "remote.ca_file: \(device)")) {
            try RemotePollerConfiguration(url: "https://127.0.0.1/", caFile: "/dev/zero").prepare()
        }
        #expect(throws: RemoteConfigurationError.self) {
            try RemotePollerConfiguration(url: "https://127.0.0.1/", caFile: big).prepare()
        }
        #expect(throws: RemoteConfigurationError.self) {
            try RemotePollerConfiguration(url: "http://127.0.0.1/", staleAfter: .zero).prepare()
        }
    }
}
