import BeacondTestSupport
import Foundation
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// `status.config` (which file is in force, its digest, the reloads) and the human `config` and
/// `mqtt` lines of `beacond status`.
@Suite struct StatusConfigPartTests {
    static let digest = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

    static func config(failure: String? = nil) -> ConfigStatus {
        var config = ConfigStatus(
            path: "/etc/beacond/beacond.yaml", sha256: digest, loadedAt: "2026-11-23T07:00:00.250Z", loadedAge: 303.5)
        config.reloads = 4
        config.reloadFailures = 2
        config.lastFailure = failure
        return config
    }

    func line(_ status: StatusMessage) -> String { String(decoding: status.line, as: UTF8.self) }

    @Test func configPartRendersAndDecodesBack() throws {
        var status = StatusMessage.sample()
        status.config = Self.config(failure: "/etc/beacond/beacond.yaml:4:3: zones.nmaes: unknown key\n\u{1B}[2J")
        let text = line(status)
        #expect(
            text.contains(
                #""config":{"path":"/etc/beacond/beacond.yaml","sha256":"\#(Self.digest)","#
                    + #""loaded_at":"2026-11-23T07:00:00.250Z","loaded_age_s":303.500,"reloads":4,"#
                    + #""reload_failures":2,"last_failure":"/etc/beacond/beacond.yaml:4:3: zones.nmaes: "#
                    + #"unknown key\n\u001b[2J"}"#), "\(text)")
        #expect(try ServerMessage(line: Array(status.line.dropLast())) == .status(status))

        // Without a file: path and sha256 are null, not missing; so is last_failure with no refusal.
        var bare = StatusMessage.sample()
        bare.config = ConfigStatus(path: nil, sha256: nil, loadedAt: "2026-11-23T07:00:00.000Z", loadedAge: 0)
        #expect(line(bare).contains(#""config":{"path":null,"sha256":null,"#))
        #expect(line(bare).contains(#""last_failure":null}"#))
        #expect(try ServerMessage(line: Array(bare.line.dropLast())) == .status(bare))
        // A status from another server, without the part, still decodes.
        #expect(!line(StatusMessage.sample()).contains("\"config\""))
    }

    @Test func aLongFailureIsCapped() {
        let long = String(repeating: "/etc/beacond/beacond.yaml:9:1: x: unknown key\n", count: 100)
        let capped = ConfigStatus.cappedFailure(long)
        #expect(capped.utf8.count == ConfigStatus.maxFailureLength)
        #expect(capped.hasSuffix("…"))
        #expect(long.hasPrefix(String(capped.dropLast())))
        #expect(ConfigStatus.cappedFailure("short") == "short")
        // One Character of 100,000 scalars (a key of combining marks) is cut by bytes, not characters.
        let combining = "/x.yaml:1:1: a" + String(repeating: "\u{301}", count: 100_000) + ": unknown key"
        #expect(combining.count < ConfigStatus.maxFailureLength)
        let cut = ConfigStatus.cappedFailure(combining)
        #expect(cut.utf8.count <= ConfigStatus.maxFailureLength && cut.utf8.count > ConfigStatus.maxFailureLength - 4)
        #expect(cut.unicodeScalars.starts(with: "/x.yaml:1:1: a\u{301}".unicodeScalars))
        #expect(cut.unicodeScalars.last == "…")
    }

    @Test func humanStatusShowsTheConfigLine() {
        var status = StatusMessage.sample()
        status.config = Self.config()
        let report = StatusReport.render(status)
        #expect(
            report.contains(
                "config    /etc/beacond/beacond.yaml sha256 0123456789ab, loaded 5m03s ago, 4 reloads, 2 refused\n"),
            "\(report)")
        #expect(!report.contains("refused:"))

        status.config = Self.config(
            failure: "/etc/beacond/beacond.yaml:4:3: zones.nmaes: unknown key\n/etc/beacond/beacond.yaml:5:1: b: x")
        let refused = StatusReport.render(status)
        #expect(
            refused.contains(
                "2 refused; last reload refused: /etc/beacond/beacond.yaml:4:3: zones.nmaes: unknown key …\n"),
            "\(refused)")

        // Whatever the socket sent, nothing reaches the terminal raw.
        var hostile = Self.config(failure: "\u{1B}]0;pwned\u{07}")
        hostile.path = "/tmp/\u{1B}[2J.yaml"
        hostile.sha256 = "\u{1B}[31m"
        hostile.loadedAge = .nan
        status.config = hostile
        let escaped = StatusReport.render(status)
        #expect(!escaped.contains("\u{1B}") && !escaped.contains("\u{07}"))
        #expect(escaped.contains("loaded ? ago"))

        var noFile = StatusMessage.sample()
        noFile.config = ConfigStatus(path: nil, sha256: nil, loadedAt: "2026-11-23T07:00:00.000Z", loadedAge: 1.5)
        #expect(
            StatusReport.render(noFile).contains(
                "config    no file (built-in defaults and flags), loaded 1.5s ago, 0 reloads, 0 refused\n"))
        #expect(!StatusReport.render(StatusMessage.sample()).contains("config "))
    }

    @Test func humanStatusShowsTheMqttLine() {
        var mqtt = MqttStatus()
        mqtt.url = "mqtt://broker.venue:1883"
        mqtt.node = "kiosk-7"
        mqtt.connected = true
        mqtt.reconnects = 2
        mqtt.publishedStates = 40
        mqtt.coalescedStates = 3
        mqtt.publishedSightings = 900
        mqtt.droppedSightings = 12
        mqtt.lastError = "connection refused"
        var status = StatusMessage.sample()
        status.mqtt = mqtt
        let report = StatusReport.render(status)
        #expect(
            report.contains(
                "mqtt      mqtt://broker.venue:1883 node kiosk-7, connected, 2 reconnects, states 40 sent 3 coalesced, "
                    + "sightings 900 sent 12 dropped\n"), "\(report)")

        // Down: says so, with why; credentials in a URL from any socket are never shown.
        mqtt.connected = false
        mqtt.url = "mqtts://user:s3cret@broker.venue:8883/x"
        mqtt.lastError = "connection refused\u{1B}[2J"
        status.mqtt = mqtt
        let down = StatusReport.render(status)
        #expect(down.contains("mqtt      mqtts://broker.venue:8883/x node kiosk-7, NOT connected, 2 reconnects"))
        #expect(down.contains("dropped, last error: connection refused\\u{1b}[2J\n"), "\(down)")
        #expect(!down.contains("s3cret") && !down.contains("user"))
        #expect(!StatusReport.render(StatusMessage.sample()).contains("mqtt "))
    }

    /// What the daemon's SIGHUP does with `status.config`: a refused file keeps the digest of the
    /// settings in force and records why; the next good file replaces the digest and clears it.
    @Test func aRefusedReloadKeepsTheDigestInForceAndSetsLastFailure() throws {
        let scratch = ConfigScratch()
        let good = "fusion:\n  min_rssi: -80\n"
        let path = scratch.write("beacond.yaml", good)
        let loaded = try DaemonConfiguration.loadIdentified(path: path, overrides: DaemonOverrides())
        let file = try #require(loaded.file)
        #expect(file.path == path)
        #expect(file.sha256 == SHA256Digest(of: Array(good.utf8)))
        let tracker = ConfigInForce(file: loaded.file, wallMicros: 1_795_417_200_000_000, bootMicros: 5_000_000)

        scratch.write("beacond.yaml", good + "zones:\n  nmaes: {}\n")
        do {
            _ = try DaemonConfiguration.reload(path: path, overrides: DaemonOverrides(), current: loaded.configuration)
            Issue.record("reloaded a file with an unknown key")
        } catch {
            tracker.refused(error)
        }
        let refused = tracker.status(bootMicros: 7_500_000)
        #expect(refused.sha256 == SHA256Digest(of: Array(good.utf8)).hex)
        #expect(refused.path == path)
        #expect(refused.reloads == 0 && refused.reloadFailures == 1)
        #expect(refused.lastFailure?.hasPrefix("\(path):4:3: zones.nmaes: unknown key") == true, "\(refused)")
        #expect(refused.loadedAge == 2.5)
        #expect(refused.loadedAt == "2026-11-23T07:00:00.000Z")

        let better = "fusion:\n  min_rssi: -85\n"
        scratch.write("beacond.yaml", better)
        let plan = try DaemonConfiguration.reload(
            path: path, overrides: DaemonOverrides(), current: loaded.configuration)
        #expect(plan.file?.sha256 == SHA256Digest(of: Array(better.utf8)))
        tracker.applied(plan.file, wallMicros: 1_795_417_260_000_000, bootMicros: 65_000_000)
        let applied = tracker.status(bootMicros: 65_000_000)
        #expect(applied.sha256 == SHA256Digest(of: Array(better.utf8)).hex)
        #expect(applied.reloads == 1 && applied.reloadFailures == 1)
        #expect(applied.lastFailure == nil)
        #expect(applied.loadedAge == 0)
        #expect(applied.loadedAt == "2026-11-23T07:01:00.000Z")
    }

    @Test func withoutAFileThereIsNoDigest() throws {
        let loaded = try DaemonConfiguration.loadIdentified(path: nil, overrides: DaemonOverrides())
        #expect(loaded.file == nil)
        let status = ConfigInForce(file: loaded.file).status()
        #expect(status.path == nil && status.sha256 == nil)
        #expect(status.loadedAge >= 0 && status.loadedAge < 60)
    }
}
