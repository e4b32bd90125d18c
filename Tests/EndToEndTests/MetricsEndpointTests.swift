import BeacondTestSupport
import Foundation
import Glibc
import Testing

/// Issue 13, "Prometheus metrics": the real daemon with `--metrics`, scraped by a real HTTP client
/// (Python's urllib) and parsed by a Prometheus text-format parser (`prometheus_client.parser`,
/// from the test venv: `make deps`).
@Suite(.serialized) struct MetricsEndpointTests {
    static var example: String { ReplayCommandTests.example }

    /// One scrape, as the fixture script prints it.
    struct Scrape {
        var status: Int
        var contentType: String
        var seconds: Double
        var samples: [String: Any]

        func value(_ key: String) -> Double? {
            if let number = samples[key] as? NSNumber { return number.doubleValue }
            if samples[key] as? String == "NaN" { return .nan }
            return nil
        }

        /// The `mode` label of every `beacond_track_mode` series at 1.
        var modesAtOne: [String] {
            samples.keys.filter { $0.hasPrefix("beacond_track_mode{") && value($0) == 1 }.sorted()
        }
    }

    /// The venv's python, or nil (the test then says why it cannot run).
    static var python: URL? {
        let path = RepositoryPaths.root.appendingPathComponent(".venv/bin/python3").path
        guard FileManager.default.isExecutableFile(atPath: path) else { return nil }
        let check = try? BeacondProcess.run(URL(fileURLWithPath: path), ["-c", "import prometheus_client"])
        return check?.status == 0 ? URL(fileURLWithPath: path) : nil
    }

    /// The URL the daemon logged, e.g. `http://127.0.0.1:40123/metrics`.
    static func metricsURL(_ daemon: DaemonProcess) -> String? {
        guard let line = daemon.logText.split(separator: "\n").first(where: { $0.contains("metrics at http://") }),
            let start = line.range(of: "http://")
        else { return nil }
        return String(line[start.lowerBound...]).trimmingCharacters(in: .whitespaces)
    }

    static func scrape(_ python: URL, _ url: String, count: Int, interval: Double) throws -> (
        [Scrape], [String: Int]
    ) {
        let result = try BeacondProcess.run(
            python, [RepositoryPaths.fixture("scrape_metrics.py"), url, String(count), String(interval)])
        #expect(result.status == 0, "scrape_metrics.py failed: \(result.stderr)")
        var scrapes: [Scrape] = []
        var probes: [String: Int] = [:]
        for object in try result.jsonLines() {
            if let found = object["probes"] as? [String: Int] {
                probes = found
                continue
            }
            scrapes.append(
                Scrape(
                    status: object["status"] as? Int ?? 0, contentType: object["content_type"] as? String ?? "",
                    seconds: object["seconds"] as? Double ?? 0, samples: object["samples"] as? [String: Any] ?? [:]))
        }
        return (scrapes, probes)
    }

    @Test func valuesMoveAsAReplayRuns() throws {
        guard let python = Self.python else {
            print("skipped: .venv/bin/python3 with prometheus_client is missing; run `make deps`")
            return
        }
        // The example capture spans about 250 s of capture time: about 10 s at 25x.
        let daemon = try DaemonProcess(
            ["--backend", "replay", "--replay", Self.example, "--speed", "25", "--metrics", "127.0.0.1:0"])
        defer { _ = daemon.stop() }
        #expect(daemon.waitForLog("metrics at http://"))
        let url = try #require(Self.metricsURL(daemon))
        let client = try LineClient(path: daemon.socket)
        _ = client.next()
        let (scrapes, probes) = try Self.scrape(python, url, count: 26, interval: 0.5)
        #expect(scrapes.count == 26)
        #expect(scrapes.allSatisfy { $0.status == 200 && $0.contentType.hasPrefix("text/plain; version=0.0.4") })

        // Every scrape shows exactly one mode; counters never go down, and they rise.
        for scrape in scrapes { #expect(scrape.modesAtOne.count == 1, "\(scrape.modesAtOne)") }
        let changes = scrapes.compactMap { $0.value("beacond_state_changes_total") }
        let signals = scrapes.compactMap { $0.value("beacond_signals_received_total") }
        #expect(changes.count == scrapes.count && signals.count == scrapes.count)
        #expect(zip(changes, changes.dropFirst()).allSatisfy { $0 <= $1 })
        #expect(zip(signals, signals.dropFirst()).allSatisfy { $0 <= $1 })
        #expect((changes.last ?? 0) > (changes.first ?? 0))
        #expect((signals.last ?? 0) > (signals.first ?? 0))

        // The mode gauge follows the published mode: the scrapes see several of the replay's modes,
        // each one the daemon published, and the last one is the final state's.
        let published = Set(
            daemon.publishedChanges.compactMap { change in
                change.split(separator: " ").first { $0.hasPrefix("mode=") }.map { String($0.dropFirst(5)) }
            })
        let prefix = "beacond_track_mode{mode=".count
        let seen = Set(scrapes.flatMap(\.modesAtOne).map { String($0.dropFirst(prefix).dropLast()) })
        #expect(seen.count >= 3, "modes seen: \(seen)")
        #expect(seen.isSubset(of: published), "seen \(seen), published \(published)")
        let status = try daemon.status()
        let finalMode = try #require((status["state"] as? [String: Any])?["mode"] as? String)
        let last = try #require(scrapes.last)
        #expect(last.value("beacond_track_mode{mode=\(finalMode)}") == 1)

        // The replay has ended by the last scrape: its totals are the capture's.
        let counters = try #require(status["counters"] as? [String: Any])
        #expect(last.value("beacond_state_changes_total") == (counters["published"] as? Int).map(Double.init))
        #expect(last.value("beacond_signals_received_total") == 728)
        #expect(last.value("beacond_signals_accepted_total") == 9)
        #expect(last.value("beacond_signals_rejected_total{reason=invalid_frame}") == 1)
        #expect(last.value("beacond_reports_total{backend=replay}") == 729)
        #expect(scrapes.first?.value("beacond_scanner_up") == 1)
        #expect(last.value("beacond_scanner_up") == 0)
        #expect(last.value("beacond_clients_connected") == 1)
        #expect(last.value("beacond_remote_age_seconds")?.isNaN == true)
        // Every publication's latency was recorded, after its fan-out.
        #expect(last.value("beacond_publish_latency_seconds_count") == last.value("beacond_state_changes_total"))
        #expect(
            last.value("beacond_publish_latency_seconds_bucket{le=+Inf}")
                == last.value(
                    "beacond_publish_latency_seconds_count"))

        #expect(probes["GET /"] == 404)
        #expect(probes["GET /metricsx"] == 404)
        #expect(probes["POST /metrics"] == 405)
        #expect(probes["DELETE /metrics"] == 405)
        #expect(probes["GET /metrics?x=1"] == 200)
        let times = scrapes.map(\.seconds).sorted()
        print(
            """
            metrics: \(scrapes.count) scrapes, request time median \(Int(times[times.count / 2] * 1e6)) µs, \
            max \(Int((times.last ?? 0) * 1e6)) µs
            """)
        #expect(daemon.stop() != nil)
        #expect(daemon.process.terminationStatus == 0)
    }

    @Test(arguments: [
        ("nonsense", "\"nonsense\" has no port"),
        ("127.0.0.1:65536", "\"127.0.0.1:65536\": the port must be a number from 0 to 65535"),
        (
            "metrics.example:9464",
            "\"metrics.example:9464\": the address must be an IPv4 address, a bracketed IPv6 address or localhost"
        ),
    ])
    func aBadFlagExits64(value: String, reason: String) throws {
        let run = try BeacondProcess.run(["run", "--backend", "replay", "--replay", Self.example, "--metrics", value])
        #expect(run.status == 64)
        #expect(run.stderr.contains("beacond run: --metrics (metrics.listen): \(reason)"), "\(run.stderr)")
    }

    @Test func aBadConfigValueExits78WithItsPosition() throws {
        let config = BeacondProcess.temporaryFile("metrics-bad.yaml")
        try "metrics:\n  listen: \"127.0.0.1\"\n".write(toFile: config, atomically: true, encoding: .utf8)
        let run = try BeacondProcess.run(
            ["run", "--config", config, "--backend", "replay", "--replay", Self.example])
        #expect(run.status == 78)
        #expect(run.stderr.contains("\(config):2:11: metrics.listen: \"127.0.0.1\" has no port"), "\(run.stderr)")
    }

    @Test func aPortInUseIsAClearStartError() throws {
        // A listener of the test's own holds a port; the daemon must say so and exit 1.
        let holder = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #expect(holder >= 0)
        defer { close(holder) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(holder, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        #expect(bound == 0 && listen(holder, 1) == 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(holder, $0, &length) }
        }
        let port = Int(UInt16(bigEndian: address.sin_port))
        let daemon = try DaemonProcess(
            ["--backend", "replay", "--replay", Self.example, "--speed", "max", "--metrics", "127.0.0.1:\(port)"])
        #expect(blockingWaitUntil(within: 10) { !daemon.process.isRunning })
        #expect(daemon.process.terminationStatus == 1)
        #expect(
            daemon.logText.contains(
                "cannot serve metrics on 127.0.0.1:\(port) (metrics.listen, --metrics): the port is already in use"),
            "\(daemon.logText)")
        // The daemon cleaned up: its socket file is gone.
        #expect(!FileManager.default.fileExists(atPath: daemon.socket))
    }
}
