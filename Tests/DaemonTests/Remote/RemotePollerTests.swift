import BeacondTestSupport
import CircuitState
import Foundation
import Logging
import ServiceLifecycle
import Testing

@testable import BeacondClient
@testable import BeacondCore

private let apiObject = """
    {"id":7,"global_mode":"RED_FLAG","mode":"GREEN","message":"Debris at turn 3","temperature":21.5,
     "humidity":"40","wind":"NW 12","forecast":"dry","last_updated":"2026-05-16T12:00:10Z"}
    """

@Suite(.enabled(if: RemoteTestTools.hasPython, "needs /usr/bin/python3 for the local venue API server"))
struct RemoteFetchTests {
    func fetch(_ configuration: RemotePollerConfiguration) async throws -> Result<RemoteSnapshot, RemoteFailure> {
        let remote = try configuration.prepare()
        let client = remote.makeHTTPClient(eventLoopGroup: .singletonMultiThreadedEventLoopGroup)
        let result = try await RemoteFetcher.fetch(remote, client: client)
        try await client.shutdown()
        return result
    }

    @Test func parsesTheObjectItsChangesEmptyObjectAndTopLevelArray() async throws {
        let server = try RemoteAPIServer()
        defer { server.stop() }
        let configuration = RemotePollerConfiguration(url: server.url, timeout: .seconds(2))
        try server.serve(apiObject)
        let first = try await fetch(configuration).get()
        #expect(
            first
                == RemoteSnapshot(
                    id: "7", globalMode: "RED_FLAG", mode: "GREEN", message: "Debris at turn 3", temperature: 21.5,
                    humidity: 40, wind: "NW 12", forecast: "dry", lastUpdated: "2026-05-16T12:00:10Z"))
        #expect(first.trackMode == .redFlag)

        try server.serve(#"{"global_mode":"","mode":"SAFETY_CAR","message":"SC deployed"}"#)
        let changed = try await fetch(configuration).get()
        #expect(changed.trackMode == .safetyCar)
        #expect(changed.message == "SC deployed")

        try server.serve("{}")
        #expect(try await fetch(configuration).get() == RemoteSnapshot())

        try server.serve(#"[{"global_mode":"EVACUATION","message":"leave now"},{"global_mode":"GREEN"}]"#)
        let array = try await fetch(configuration).get()
        #expect(array.trackMode == .evacuation)
        #expect(array.message == "leave now")

        // Exactly at the cap is accepted.
        let padded = #"{"global_mode":"GREEN"}"# + String(repeating: " ", count: 65536 - 23)
        #expect(padded.utf8.count == 65536)
        try server.serve(padded)
        #expect(try await fetch(configuration).get().trackMode == .normal)
    }

    @Test func classifiesEachKindOfFailure() async throws {
        let server = try RemoteAPIServer()
        defer { server.stop() }
        let configuration = RemotePollerConfiguration(url: server.url, timeout: .milliseconds(600))

        try server.serve(#"{"error":"boom"}"#, status: 500)
        #expect(try await fetch(configuration).failure?.kind == .httpStatus)
        #expect(try await fetch(configuration).failure?.reason == "HTTP 500")
        try server.serve("", status: 302)
        #expect(try await fetch(configuration).failure?.kind == .httpStatus)

        try server.serve("<html>Bad Gateway</html>")
        #expect(try await fetch(configuration).failure?.kind == .notJSON)
        try server.serve("")
        #expect(try await fetch(configuration).failure?.kind == .notJSON)
        try server.serve("42")
        #expect(try await fetch(configuration).failure?.kind == .invalidDocument)
        try server.serve("[1,2]")
        #expect(try await fetch(configuration).failure?.kind == .invalidDocument)

        // Over the cap by one byte, announced by Content-Length.
        try server.serve(#"{"global_mode":"GREEN"}"# + String(repeating: " ", count: 65537 - 23))
        #expect(try await fetch(configuration).failure?.kind == .tooLarge)
        // Over the cap without a Content-Length.
        try server.respond([
            "status": 200, "chunked": true,
            "body": #"{"m":""# + String(repeating: "y", count: 70000) + #""}"#,
        ])
        #expect(try await fetch(configuration).failure?.kind == .tooLarge)

        let started = ContinuousClock.now
        try server.respond(["hang": 30])
        let hung = try await fetch(configuration).failure
        #expect(hung?.kind == .timeout)
        #expect(ContinuousClock.now - started < .seconds(3))

        let refused = RemotePollerConfiguration(
            url: "http://127.0.0.1:\(RemoteTestTools.closedPort())/api/state",
            timeout: .seconds(2))
        let refusedStarted = ContinuousClock.now
        #expect(try await fetch(refused).failure?.kind == .connectionRefused)
        #expect(ContinuousClock.now - refusedStarted < .seconds(1))
    }

    @Test func stopsReadingAnEndlessBodyAtTheCap() async throws {
        let server = try RemoteAPIServer()
        defer { server.stop() }
        let total = 64 * 1024 * 1024
        try server.respond(["stream_bytes": total])
        let started = ContinuousClock.now
        let result = try await fetch(RemotePollerConfiguration(url: server.url, timeout: .seconds(20)))
        #expect(result.failure?.kind == .tooLarge)
        // Well within the timeout (on a quiet machine, a fraction of a second; the bound leaves
        // room for the suite's other tests sharing two cores).
        #expect(ContinuousClock.now - started < .seconds(10))
        // The server learns the client went away long before it could send everything.
        let end = await waitForValue(within: 3, every: .milliseconds(10)) {
            server.log().first { $0["event"] as? String == "stream_end" }
        }
        #expect(end?["complete"] as? Bool == false)
        #expect((end?["sent"] as? Int ?? total) < total / 2)
    }

    @Test func sendsTheBearerTokenOnlyWhenConfigured() async throws {
        let server = try RemoteAPIServer()
        defer { server.stop() }
        let directory = try RemoteTestTools.temporaryDirectory()
        try "venue-token-123\n".write(toFile: directory + "/token", atomically: true, encoding: .utf8)
        try server.serve(apiObject)
        _ = try await fetch(RemotePollerConfiguration(url: server.url)).get()
        _ = try await fetch(RemotePollerConfiguration(url: server.url, bearerTokenFile: directory + "/token")).get()
        let requests = server.requests()
        #expect(requests.count == 2)
        #expect(requests.first?["authorization"] is NSNull)
        #expect(requests.last?["authorization"] as? String == "Bearer venue-token-123")
        #expect(requests.last?["path"] as? String == "/api/state")
    }

    @Test func readsFileURLs() async throws {
        let directory = try RemoteTestTools.temporaryDirectory()
        let path = directory + "/state.json"
        try #"[{"global_mode":"YELLOW","message":"from disk"}]"#.write(toFile: path, atomically: true, encoding: .utf8)
        let configuration = RemotePollerConfiguration(url: "file://" + path)
        let snapshot = try await RemoteFetcher.fetch(try configuration.prepare(), client: nil).get()
        #expect(snapshot.trackMode == .yellowFlag)
        #expect(snapshot.message == "from disk")

        try Data(repeating: UInt8(ascii: " "), count: 70000).write(to: URL(fileURLWithPath: path))
        #expect(try await RemoteFetcher.fetch(try configuration.prepare(), client: nil).failure?.kind == .tooLarge)
        try "nope".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(try await RemoteFetcher.fetch(try configuration.prepare(), client: nil).failure?.kind == .notJSON)
        let missing = RemotePollerConfiguration(url: "file://" + directory + "/missing.json")
        #expect(try await RemoteFetcher.fetch(try missing.prepare(), client: nil).failure?.kind == .file)
        let folder = RemotePollerConfiguration(url: "file://" + directory)
        #expect(try await RemoteFetcher.fetch(try folder.prepare(), client: nil).failure?.kind == .file)
    }
}

@Suite(
    .enabled(
        if: RemoteTestTools.hasPython && RemoteTestTools.hasOpenSSL,
        "needs /usr/bin/python3 and /usr/bin/openssl for a local HTTPS server with a self-signed certificate"))
struct RemoteTLSTests {
    @Test func verifiesAgainstThePinnedCAFileOnly() async throws {
        let directory = try RemoteTestTools.temporaryDirectory()
        let venue = try RemoteTestTools.selfSignedCertificate(in: directory, name: "venue")
        let other = try RemoteTestTools.selfSignedCertificate(in: directory, name: "other")
        let server = try RemoteAPIServer(tls: venue)
        defer { server.stop() }
        try server.serve(apiObject)

        func fetch(caFile: String?) async throws -> Result<RemoteSnapshot, RemoteFailure> {
            let remote = try RemotePollerConfiguration(url: server.url, timeout: .seconds(3), caFile: caFile).prepare()
            let client = remote.makeHTTPClient(eventLoopGroup: .singletonMultiThreadedEventLoopGroup)
            let result = try await RemoteFetcher.fetch(remote, client: client)
            try await client.shutdown()
            return result
        }

        #expect(try await fetch(caFile: venue.cert).get().trackMode == .redFlag)
        // The system store does not know the venue's certificate: no silent fallback.
        #expect(try await fetch(caFile: nil).failure?.kind == .tls)
        // Pinned to another certificate: refused, even though it is a valid CA.
        #expect(try await fetch(caFile: other.cert).failure?.kind == .tls)
        #expect(server.requests().count == 1)
    }
}

@Suite(.enabled(if: RemoteTestTools.hasPython, "needs /usr/bin/python3 for the local venue API server"))
struct RemotePollerTests {
    @Test func logsOncePerTransitionCountsAndBacksOff() async throws {
        let server = try RemoteAPIServer()
        defer { server.stop() }
        let (logger, logs) = CapturingLogHandler.logger()
        let sink = RecordingRemoteSink()
        let interval = Duration.seconds(2)
        let poller = try RemoteStatePoller(
            configuration: RemotePollerConfiguration(
                url: server.url, pollInterval: interval, timeout: .seconds(2),
                staleAfter: .seconds(60)),
            sink: sink, logger: logger, random: { 0 }, wallClock: { 1_747_396_810_000_000 })

        try server.serve(apiObject)
        #expect(try await poller.pollOnce() <= interval)
        try server.serve("oops", status: 503)
        let failingDelays = [try await poller.pollOnce(), try await poller.pollOnce(), try await poller.pollOnce()]
        try server.serve("<garbage>")
        let garbageDelays = [try await poller.pollOnce(), try await poller.pollOnce()]
        try server.serve("{}")
        let recoveredDelay = try await poller.pollOnce()
        #expect(try await poller.pollOnce() <= interval)
        await poller.shutdownClient()

        #expect(failingDelays == [.seconds(2), .seconds(4), .seconds(8)])
        #expect(garbageDelays == [.seconds(12), .seconds(12)])
        #expect(recoveredDelay <= interval)
        #expect(
            sink.events == [
                .fetched(try RemoteStateDocument.snapshot(fromBody: Data(apiObject.utf8))),
                .failed(.httpStatus), .failed(.httpStatus), .failed(.httpStatus), .failed(.notJSON), .failed(.notJSON),
                .fetched(RemoteSnapshot()), .fetched(RemoteSnapshot()),
            ])

        let warnings = logs.at(.warning)
        #expect(warnings.count == 2)
        #expect(warnings.first?.metadata["kind"] == "http_status")
        #expect(warnings.first?.message.contains("HTTP 503") == true)
        #expect(warnings.last?.metadata["kind"] == "not_json")
        #expect(warnings.last?.metadata["previous_kind"] == "http_status")
        let recoveries = logs.at(.info).filter { $0.message.contains("recovered") }
        #expect(recoveries.count == 1)
        #expect(recoveries.first?.metadata["failed_polls"] == "5")
        #expect(logs.all.filter { $0.level >= .warning }.count == 2)

        let counters = poller.counters
        #expect(counters.polls == 8)
        #expect(counters.successes == 3)
        #expect(counters.failures == [.httpStatus: 3, .notJSON: 2])
        #expect(counters.consecutiveFailures == 0)
        #expect(counters.lastError?.kind == .notJSON)
        #expect(counters.lastSuccessWallMicros == 1_747_396_810_000_000)

        var writer = JSONWriter()
        writer.beginObject()
        writer.key("remote_poller")
        poller.pollerStatus.render(into: &writer)
        writer.endObject()
        let status =
            try #require(
                try JSONSerialization.jsonObject(with: Data(writer.bytes)) as? [String: Any])["remote_poller"]
            as? [String: Any]
        #expect(status?["polls"] as? Int == 8)
        #expect((status?["failures"] as? [String: Any])?["http_status"] as? Int == 3)
        #expect(status?["last_error_kind"] as? String == "not_json")
        #expect(status?["last_success_at"] as? Double == 1_747_396_810)
    }

    @Test func runPollsUntilCancelledAndPicksUpChanges() async throws {
        let server = try RemoteAPIServer()
        defer { server.stop() }
        let sink = RecordingRemoteSink()
        try server.serve(#"{"global_mode":"GREEN"}"#)
        let poller = try RemoteStatePoller(
            configuration: RemotePollerConfiguration(
                url: server.url, pollInterval: .milliseconds(100),
                timeout: .seconds(1)),
            sink: sink, logger: Logger(label: "test"))
        let task = Task { try await poller.run() }
        #expect(await sink.wait { $0.contains(.fetched(RemoteSnapshot(globalMode: "GREEN"))) })
        try server.serve(#"{"global_mode":"RED_FLAG"}"#)
        #expect(await sink.wait { $0.contains(.fetched(RemoteSnapshot(globalMode: "RED_FLAG"))) })
        try server.serve("", status: 500)
        #expect(await sink.wait { $0.contains(.failed(.httpStatus)) })

        let stopped = ContinuousClock.now
        task.cancel()
        try await task.value
        #expect(ContinuousClock.now - stopped < .seconds(1))
        let count = server.requests().count
        // A check that nothing more happens: no event marks "no request will come", so it looks a while.
        try await Task.sleep(for: .milliseconds(300))
        #expect(server.requests().count == count)
    }

    @Test func updateAppliesAtOnceDespiteALongInterval() async throws {
        let directory = try RemoteTestTools.temporaryDirectory()
        try #"{"global_mode":"GREEN"}"#.write(toFile: directory + "/a.json", atomically: true, encoding: .utf8)
        try #"{"global_mode":"YELLOW"}"#.write(toFile: directory + "/b.json", atomically: true, encoding: .utf8)
        let sink = RecordingRemoteSink()
        let poller = try RemoteStatePoller(
            configuration: RemotePollerConfiguration(url: "file://\(directory)/a.json", pollInterval: .seconds(60)),
            sink: sink, logger: Logger(label: "test"))
        let task = Task { try await poller.run() }
        #expect(await sink.wait { $0.count == 1 })
        #expect(throws: RemoteConfigurationError.self) {
            try poller.update(RemotePollerConfiguration(url: "gopher://nowhere"))
        }
        try poller.update(RemotePollerConfiguration(url: "file://\(directory)/b.json", pollInterval: .seconds(60)))
        #expect(await sink.wait(within: 2) { $0.count == 2 })
        #expect(
            sink.events == [
                .fetched(RemoteSnapshot(globalMode: "GREEN")),
                .fetched(RemoteSnapshot(globalMode: "YELLOW")),
            ])
        task.cancel()
        try await task.value
    }
}

@Suite struct RemotePollerLifecycleTests {
    @Test func stopsPromptlyOnAServiceGroupGracefulShutdown() async throws {
        let directory = try RemoteTestTools.temporaryDirectory()
        try #"{"global_mode":"VSC"}"#.write(toFile: directory + "/state.json", atomically: true, encoding: .utf8)
        let sink = RecordingRemoteSink()
        let poller = try RemoteStatePoller(
            configuration: RemotePollerConfiguration(
                url: "file://\(directory)/state.json", pollInterval: .seconds(600)),
            sink: sink, logger: Logger(label: "test"))
        let group = ServiceGroup(services: [poller], logger: Logger(label: "test"))
        let task = Task { try await group.run() }
        #expect(await sink.wait { $0.count >= 1 })
        #expect(sink.events == [.fetched(RemoteSnapshot(globalMode: "VSC"))])
        // The poller is in its ten-minute wait: a stop that waited for the next poll would take it.
        // The bound leaves room for a loaded machine (the timed tests run beside a 50,000/s flood).
        let stopping = ContinuousClock.now
        await group.triggerGracefulShutdown()
        try await task.value
        #expect(ContinuousClock.now - stopping < .seconds(10))
        let count = sink.events.count
        // A check that nothing more happens: no event marks "no delivery will come", so it looks a while.
        try await Task.sleep(for: .milliseconds(200))
        #expect(sink.events.count == count)
        #expect(poller.counters.successes == count)
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let failure) = self { failure } else { nil }
    }
}
