import BeacondCore
import BeacondTestSupport
import Foundation
import Glibc
import Testing

/// Issue 33, "A Grafana dashboard for the metrics": `docs/grafana/beacond.json`, imported as is.
/// Grafana is in neither Debian's archive nor PyPI, so it cannot run here: the JSON is checked
/// against the dashboard schema's required fields, and every panel's query is evaluated by a real
/// Prometheus (Debian's `prometheus`, `make deps`) scraping live daemons, through its HTTP API.
@Suite(.serialized) struct GrafanaDashboardTests {
    static let file = RepositoryPaths.root.appendingPathComponent("docs/grafana/beacond.json").path
    static let prometheus = "/usr/bin/prometheus"

    /// Families whose series appear only when first seen; a daemon at start without optional
    /// features exports every other family. `beacond_signed_clock_offset_seconds{source}` has one
    /// series per signed sender, from its first accepted frame (docs/metrics.md). A panel query on
    /// one of them must parse and find nothing on the plain daemon (so this list cannot go stale),
    /// and find series on a daemon that replayed the signed example.
    static let onlyWhenFirstSeen: Set<String> = ["beacond_signed_clock_offset_seconds"]

    /// Grafana's built-in variables the queries use, and the values the test gives them
    /// (`$__rate_interval` is at least four scrape intervals; the test's Prometheus scrapes every second).
    static let builtIns = ["__rate_interval": "1m", "__interval": "15s", "__range": "5m"]

    static func load() throws -> [String: Any] {
        let data = try Data(contentsOf: URL(fileURLWithPath: file))
        guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw TestSupportError("\(file) is not a JSON object")
        }
        return object
    }

    static func panels(_ dashboard: [String: Any]) -> [[String: Any]] {
        dashboard["panels"] as? [[String: Any]] ?? []
    }

    static func variables(_ dashboard: [String: Any]) -> [[String: Any]] {
        (dashboard["templating"] as? [String: Any])?["list"] as? [[String: Any]] ?? []
    }

    /// Every panel query: (panel title, refId, expr).
    static func queries(_ dashboard: [String: Any]) -> [(panel: String, refId: String, expr: String)] {
        panels(dashboard).flatMap { panel in
            (panel["targets"] as? [[String: Any]] ?? []).map { target in
                (panel["title"] as? String ?? "?", target["refId"] as? String ?? "?", target["expr"] as? String ?? "")
            }
        }
    }

    /// The `beacond_*` families an expression reads (a histogram's `_bucket`, `_sum`, `_count` count
    /// as the histogram).
    static func families(in expr: String) -> Set<String> {
        let histograms = Set(MetricCatalogue.all.filter { $0.kind == .histogram }.map(\.name))
        var found = Set<String>()
        for token in expr.split(whereSeparator: { !($0.isLetter || $0.isNumber || $0 == "_") })
        where token.hasPrefix("beacond_") {
            var name = String(token)
            for part in ["_bucket", "_sum", "_count"] where name.hasSuffix(part) {
                let base = String(name.dropLast(part.count))
                if histograms.contains(base) { name = base }
            }
            found.insert(name)
        }
        return found
    }

    /// `expr` with Grafana's variables replaced as Grafana would: `$job` and `$instance` (used as
    /// `=~"$instance"`) by the values given, the built-ins by `builtIns`.
    static func substitute(_ expr: String, job: String, instance: String) -> String {
        let values = builtIns.merging(["job": job, "instance": instance]) { $1 }
        var result = expr
        for (name, value) in values.sorted(by: { $0.key.count > $1.key.count }) {
            result = result.replacingOccurrences(of: "${\(name)}", with: value)
                .replacingOccurrences(of: "$\(name)", with: value)
        }
        return result
    }

    /// The required fields come from Grafana's own schema of the classic dashboard JSON: the
    /// `Dashboard` kind in grafana/grafana's `kinds/dashboard/dashboard_kind.cue` (lineage schema
    /// 0.0, the JSON model Grafana exports and imports). Its fields that are not optional: `editable`,
    /// `graphTooltip` (0, 1 or 2) and `schemaVersion`; per panel (`#Panel`) a non-empty `type`,
    /// `options`, `fieldConfig` (`defaults`, `overrides`) and `transformations`; `#GridPos` h > 0,
    /// 0 < w ≤ 24, 0 ≤ x < 24, y ≥ 0; `#RowPanel` `type: "row"`, `collapsed`, `id`, `panels`;
    /// `#VariableModel` a `type` of `#VariableType`, a `name` and `hide` (its `state` is runtime
    /// state Grafana never exports). An import as is also needs `title`, `uid` (8 to 40 characters),
    /// `version`, `time` and `templating`; and this dashboard's panels each need a title, a
    /// description, the `${datasource}` variable, and queries with an expr and a unique refId.
    @Test func theDashboardHasTheSchemasRequiredFields() throws {
        let dashboard = try Self.load()
        #expect((dashboard["title"] as? String)?.isEmpty == false)
        #expect((8...40).contains((dashboard["uid"] as? String)?.count ?? 0), "uid: \(dashboard["uid"] ?? "none")")
        #expect((dashboard["schemaVersion"] as? Int ?? 0) >= 36)
        #expect(dashboard["version"] as? Int != nil && dashboard["editable"] as? Bool != nil)
        #expect([0, 1, 2].contains(dashboard["graphTooltip"] as? Int ?? -1))
        let time = dashboard["time"] as? [String: Any]
        #expect(time?["from"] as? String != nil && time?["to"] as? String != nil)

        let types: Set = ["query", "adhoc", "constant", "datasource", "interval", "textbox", "custom", "system"]
        let variables = Self.variables(dashboard)
        for variable in variables {
            #expect(types.contains(variable["type"] as? String ?? ""), "variable type: \(variable)")
            #expect((variable["name"] as? String)?.isEmpty == false)
            #expect([0, 1, 2].contains(variable["hide"] as? Int ?? -1), "hide: \(variable)")
        }
        let names = variables.compactMap { $0["name"] as? String }
        #expect(Set(names).count == names.count, "variables: \(names)")
        let byName = Dictionary(variables.map { ($0["name"] as? String ?? "", $0) }) { first, _ in first }
        #expect(byName["datasource"]?["type"] as? String == "datasource")
        #expect(byName["datasource"]?["query"] as? String == "prometheus")
        for name in ["job", "instance"] {
            let query = byName[name]?["query"] as? String ?? ""
            #expect(byName[name]?["type"] as? String == "query", "no query variable \(name)")
            #expect(query.hasPrefix("label_values(beacond_build_info") && query.hasSuffix(", \(name))"), "\(query)")
            #expect(byName[name]?["includeAll"] as? Bool == true && byName[name]?["multi"] as? Bool == true)
        }

        var ids = Set<Int>()
        var boxes: [(title: String, x: Int, y: Int, w: Int, h: Int)] = []
        for panel in Self.panels(dashboard) {
            let title = panel["title"] as? String ?? ""
            let type = panel["type"] as? String ?? ""
            #expect(!title.isEmpty && !type.isEmpty, "a panel without a title or type: \(panel["id"] ?? "no id")")
            let id = panel["id"] as? Int ?? -1
            let inserted = ids.insert(id).inserted
            #expect(id >= 0 && inserted, "\(title): id \(id), missing or used twice")
            let grid = panel["gridPos"] as? [String: Any] ?? [:]
            let (x, y) = (grid["x"] as? Int ?? -1, grid["y"] as? Int ?? -1)
            let (w, h) = (grid["w"] as? Int ?? 0, grid["h"] as? Int ?? 0)
            #expect(h > 0 && w > 0 && w <= 24 && x >= 0 && x < 24 && x + w <= 24 && y >= 0, "\(title): \(grid)")
            boxes.append((title, x, y, w, h))
            if type == "row" {
                #expect(panel["collapsed"] as? Bool != nil && panel["panels"] is [Any], "row \(title)")
                continue
            }
            #expect((panel["description"] as? String)?.isEmpty == false, "\(title): no description")
            let source = panel["datasource"] as? [String: Any]
            #expect(source?["type"] as? String == "prometheus" && source?["uid"] as? String == "${datasource}")
            #expect(panel["options"] is [String: Any], "\(title): options")
            let fieldConfig = panel["fieldConfig"] as? [String: Any]
            #expect(fieldConfig?["defaults"] is [String: Any] && fieldConfig?["overrides"] is [Any], "\(title)")
            #expect(panel["transformations"] is [Any], "\(title): transformations")
            let targets = panel["targets"] as? [[String: Any]] ?? []
            let refIds = targets.compactMap { $0["refId"] as? String }.filter { !$0.isEmpty }
            #expect(!targets.isEmpty && refIds.count == targets.count && Set(refIds).count == refIds.count, "\(title)")
            for target in targets {
                let expr = target["expr"] as? String ?? ""
                #expect(!expr.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "\(title): empty expr")
                // Only known variables: after substitution no `$` is left.
                #expect(!Self.substitute(expr, job: "j", instance: "i").contains("$"), "\(title): \(expr)")
                let targetSource = target["datasource"] as? [String: Any]
                #expect(targetSource == nil || targetSource?["uid"] as? String == "${datasource}", "\(title)")
            }
        }
        for (index, a) in boxes.enumerated() {
            for b in boxes[(index + 1)...] {
                let overlap = a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h
                #expect(!overlap, "panels \"\(a.title)\" and \"\(b.title)\" overlap")
            }
        }
    }

    /// The mode panels map each mode's number in their query to that mode's name, for every mode
    /// the daemon exports (`MetricCatalogue.modeLabels`), `unknown` being 0.
    @Test func theModePanelsNameEveryMode() throws {
        let modePanels = Self.panels(try Self.load()).filter { panel in
            (panel["targets"] as? [[String: Any]] ?? []).contains { ($0["expr"] as? String ?? "").contains("mode=\"") }
        }
        #expect(modePanels.count >= 2)
        for panel in modePanels {
            let defaults = (panel["fieldConfig"] as? [String: Any])?["defaults"] as? [String: Any]
            var texts: [String: String] = [:]
            for mapping in defaults?["mappings"] as? [[String: Any]] ?? [] {
                for (value, result) in mapping["options"] as? [String: Any] ?? [:] {
                    texts[value] = (result as? [String: Any])?["text"] as? String
                }
            }
            let expr = (panel["targets"] as? [[String: Any]])?.first?["expr"] as? String ?? ""
            for mode in MetricCatalogue.modeLabels where mode != "unknown" {
                let start = expr.range(of: "mode=\"\(mode)\"} * ")?.upperBound
                let code = start.map { expr[$0...].prefix(while: \.isNumber) }
                #expect(code.flatMap { texts[String($0)] } == mode, "\(panel["title"] ?? ""): \(mode) in \(texts)")
            }
            #expect(texts["0"] == "unknown")
            #expect(Set(texts.values) == Set(MetricCatalogue.modeLabels))
        }
    }

    /// Every family in the catalogue is on a panel, and every family a panel reads exists.
    @Test func everyMetricFamilyIsOnAPanel() throws {
        let used = Self.queries(try Self.load()).reduce(into: Set<String>()) {
            $0.formUnion(Self.families(in: $1.expr))
        }
        let catalogue = Set(MetricCatalogue.all.map(\.name))
        #expect(catalogue.subtracting(used).isEmpty, "on no panel: \(catalogue.subtracting(used).sorted())")
        #expect(used.subtracting(catalogue).isEmpty, "no such family: \(used.subtracting(catalogue).sorted())")
        #expect(Self.onlyWhenFirstSeen.isSubset(of: catalogue))
    }

    /// The daemon's metrics address as a Prometheus target (`127.0.0.1:PORT`), from its log.
    static func target(_ daemon: DaemonProcess) -> String? {
        guard daemon.waitForLog("metrics at http://") else { return nil }
        return MetricsEndpointTests.metricsURL(daemon)?.replacingOccurrences(of: "http://", with: "")
            .replacingOccurrences(of: "/metrics", with: "")
    }

    @Test(
        .enabled(
            if: FileManager.default.isExecutableFile(atPath: prometheus),
            "/usr/bin/prometheus is missing: `make deps` installs prometheus"))
    func everyPanelQueryAnswersFromARealPrometheus() throws {
        let started = Date()
        let dashboard = try Self.load()
        // A daemon at start without optional features (no remote, MQTT, transmitter or key file;
        // without Bluetooth its scanner is down), and one that replayed the signed example.
        let plain = try DaemonProcess(["--backend", "hci", "--adapter", "hci0", "--metrics", "127.0.0.1:0"])
        defer { _ = plain.stop() }
        let signed = try DaemonProcess([
            "--backend", "replay", "--replay", SignedFramesTests.signed, "--speed", "max",
            "--key-file", SignedFramesTests.keys, "--metrics", "127.0.0.1:0",
        ])
        defer { _ = signed.stop() }
        #expect(signed.waitForLog("holding the final state"), "\(signed.logText)")
        let plainTarget = try #require(Self.target(plain), "\(plain.logText)")
        let signedTarget = try #require(Self.target(signed), "\(signed.logText)")
        let server = try PrometheusServer(job: "beacond", targets: [plainTarget, signedTarget])
        defer { server.stop() }
        // rate() needs two samples in its range. Prometheus applies its targets 5 s after it starts.
        try #require(server.waitForScrapes(2, targets: 2, within: 20), "never scraped: \(server.logText)")

        // The issue's claim: from its start, the plain daemon exports every family but the exceptions.
        let names = try server.query("count by (__name__) ({__name__=~\"beacond_.+\", instance=\"\(plainTarget)\"})")
        let exported = Set(
            names.result.compactMap { ($0["metric"] as? [String: Any])?["__name__"] as? String }
                .flatMap { Self.families(in: $0) })
        let catalogue = Set(MetricCatalogue.all.map(\.name))
        #expect(
            exported == catalogue.subtracting(Self.onlyWhenFirstSeen),
            "absent at start: \(catalogue.subtracting(exported).sorted())")

        var withSeries = 0
        let queries = Self.queries(dashboard)
        for (panel, refId, expr) in queries {
            let answer = try server.query(Self.substitute(expr, job: server.job, instance: plainTarget))
            #expect(answer.status == "success", "\(panel) \(refId): \(answer.error ?? "")\n\(expr)")
            #expect(answer.status != "success" || answer.resultType == "vector", "\(panel) \(refId)")
            if Self.families(in: expr).isDisjoint(with: Self.onlyWhenFirstSeen) {
                #expect(!answer.result.isEmpty, "\(panel) \(refId): no series\n\(expr)")
                withSeries += answer.result.isEmpty ? 0 : 1
                continue
            }
            #expect(answer.result.isEmpty, "\(panel) \(refId): series at start: take it off onlyWhenFirstSeen")
            let seen = try server.query(Self.substitute(expr, job: server.job, instance: signedTarget))
            #expect(seen.status == "success" && !seen.result.isEmpty, "\(panel) \(refId): none after the replay")
            withSeries += seen.result.isEmpty ? 0 : 1
        }

        // The variables' `label_values(SELECTOR, LABEL)`, through the label values API Grafana calls.
        for variable in Self.variables(dashboard) where variable["type"] as? String == "query" {
            let query = variable["query"] as? String ?? ""
            let inner = query.dropFirst("label_values(".count).dropLast()
            let comma = try #require(inner.lastIndex(of: ","), "\(query)")
            let selector = Self.substitute(String(inner[..<comma]), job: server.job, instance: ".*")
            let label = inner[inner.index(after: comma)...].trimmingCharacters(in: .whitespaces)
            let (code, body) = try server.get("/api/v1/label/\(label)/values", [("match[]", selector)])
            let values = body["data"] as? [String] ?? []
            #expect(code == 200, "\(query): \(body)")
            let expected = label == "job" ? [server.job] : [plainTarget, signedTarget]
            #expect(Set(expected).isSubset(of: Set(values)), "\(query): \(values)")
        }
        print(
            """
            grafana dashboard: \(queries.count) panel queries parse on a real Prometheus, \
            \(withSeries) return series (\(Self.onlyWhenFirstSeen.sorted()) only after the signed replay), \
            \(String(format: "%.1f", Date().timeIntervalSince(started))) s
            """)
    }
}

/// A throwaway Prometheus (Debian's `/usr/bin/prometheus`) scraping `targets` every second as job
/// `job`, its storage in a temporary directory; and a client of its HTTP API.
final class PrometheusServer {
    let job: String
    let port = RemoteTestTools.closedPort()
    let directory: String
    private let process = Process()

    init(job: String, targets: [String]) throws {
        self.job = job
        directory = try TemporaryDirectory.make(prefix: "beacond-prometheus")
        let config = """
            global:
              scrape_interval: 1s
              scrape_timeout: 1s
              evaluation_interval: 1s
            scrape_configs:
              - job_name: \(job)
                static_configs:
                  - targets: [\(targets.map { "\"\($0)\"" }.joined(separator: ", "))]

            """
        try config.write(toFile: directory + "/prometheus.yml", atomically: true, encoding: .utf8)
        _ = FileManager.default.createFile(atPath: directory + "/prometheus.log", contents: nil)
        process.executableURL = URL(fileURLWithPath: GrafanaDashboardTests.prometheus)
        process.arguments = [
            "--config.file=\(directory)/prometheus.yml", "--storage.tsdb.path=\(directory)/tsdb",
            "--web.listen-address=127.0.0.1:\(port)", "--log.level=warn",
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle(forWritingAtPath: directory + "/prometheus.log") ?? FileHandle.nullDevice
        try process.run()
    }

    deinit { stop() }

    /// Stops Prometheus (SIGTERM, then SIGKILL after 5 s) and removes its directory.
    func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGTERM)
            if !blockingWaitUntil(within: 5, { !process.isRunning }) { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: directory)
    }

    var logText: String { (try? String(contentsOfFile: directory + "/prometheus.log", encoding: .utf8)) ?? "" }

    /// Waits until every one of `targets` targets is up and scraped at least `count` times.
    func waitForScrapes(_ count: Int, targets: Int, within seconds: Double) -> Bool {
        blockingWaitUntil(within: seconds, intervalMicros: 100_000) {
            (try? query("count_over_time(up[1m]) >= \(count) and up == 1"))?.result.count == targets
        }
    }

    struct Answer {
        var status: String
        var error: String?
        var resultType: String?
        var result: [[String: Any]]
    }

    /// An instant query (`GET /api/v1/query`) at the current time.
    func query(_ expr: String) throws -> Answer {
        let body = try get("/api/v1/query", [("query", expr)]).body
        let data = body["data"] as? [String: Any]
        return Answer(
            status: body["status"] as? String ?? "", error: body["error"] as? String,
            resultType: data?["resultType"] as? String, result: data?["result"] as? [[String: Any]] ?? [])
    }

    private static let unreserved = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".utf8)

    /// Percent-encodes every byte but the unreserved ones (a `+` would read as a space).
    static func encode(_ text: String) -> String {
        text.utf8.map { byte in
            guard !unreserved.contains(byte) else { return String(UnicodeScalar(byte)) }
            let hex = String(byte, radix: 16, uppercase: true)
            return "%" + (hex.count == 1 ? "0" + hex : hex)
        }.joined()
    }

    /// `GET path?parameters` in HTTP/1.0, so Prometheus answers without chunks and closes: the
    /// status code and the JSON body (a query that does not parse is a 400 with a JSON error).
    func get(_ path: String, _ parameters: [(String, String)]) throws -> (code: Int, body: [String: Any]) {
        let query = parameters.map { Self.encode($0.0) + "=" + Self.encode($0.1) }.joined(separator: "&")
        guard let fd = TCPTestClient.connect(port: port) else { throw TestSupportError("Prometheus is not listening") }
        defer { close(fd) }
        guard TCPTestClient.send(fd, "GET \(path)?\(query) HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n") else {
            throw TestSupportError("cannot send to Prometheus")
        }
        var received: [UInt8] = []
        let deadline = Date().addingTimeInterval(5)
        while true {
            let left = Int32(deadline.timeIntervalSinceNow * 1000)
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard left > 0, poll(&poller, 1, left) == 1 else { throw TestSupportError("no answer to \(path) in 5 s") }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let count = recv(fd, &chunk, chunk.count, 0)
            if count <= 0 { break }
            received += chunk[..<count]
        }
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let end = received.indices.dropLast(3).first(where: { received[$0..<$0 + 4].elementsEqual(separator) })
        else { throw TestSupportError("not an HTTP answer: \(String(decoding: received, as: UTF8.self))") }
        let statusLine = String(decoding: received[..<end], as: UTF8.self).split(separator: " ")
        let body = try JSONSerialization.jsonObject(with: Data(received[(end + 4)...])) as? [String: Any] ?? [:]
        return (statusLine.count > 1 ? Int(statusLine[1]) ?? 0 : 0, body)
    }
}
