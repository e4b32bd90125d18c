import BeacondTestSupport
import Foundation
import Testing

/// Issue 25, item 5, end to end: a FIFO where a file is expected (the config, `mqtt.ca_file`, a
/// capture, a timeline, a `file://` remote, the config replaced before a SIGHUP) is refused at once
/// with the documented exit code, and the daemon still stops at SIGTERM. Each run is bounded
/// (`MeasuredRun` kills the process after `timeout`), so a regression fails instead of hanging.
@Suite(.serialized) struct NonRegularFileProcessTests {
    static var example: String { ReplayCommandTests.example }
    /// Far more than a refusal takes (milliseconds), far less than the kill.
    static let promptly = 5.0

    static func fifo(_ scratch: TemporaryDirectory, _ name: String) -> String {
        let path = scratch.file(name)
        #expect(mkfifo(path, 0o600) == 0)
        return path
    }

    @Test func aFIFOAsTheConfigExits78AtOnce() throws {
        let scratch = try TemporaryDirectory(prefix: "beacond-fifo", short: true)
        let config = Self.fifo(scratch, "beacond.yaml")
        let run = try MeasuredRun.beacond(
            [
                "run", "--config", config, "--backend", "replay", "--replay", Self.example, "--socket",
                scratch.file("s"),
            ],
            timeout: 20)
        print("fifo --config: exit \(run.status) in \(String(format: "%.3f", run.seconds)) s: \(run.stderr)")
        #expect(run.status == 78, "\(run.stderr)")
        #expect(run.stderr.contains("\(config): is a FIFO, not a regular file"), "\(run.stderr)")
        #expect(run.seconds < Self.promptly)
    }

    /// libmosquitto opened the CA file itself (fopen: blocked on a FIFO) before this.
    @Test func aFIFOAsTheMqttCAFileExits78AtOnce() throws {
        let scratch = try TemporaryDirectory(prefix: "beacond-fifo", short: true)
        let ca = Self.fifo(scratch, "ca.pem")
        let config = try scratch.write("beacond.yaml", "mqtt:\n  url: mqtts://127.0.0.1:1\n  ca_file: \(ca)\n")
        let run = try MeasuredRun.beacond(
            [
                "run", "--config", config, "--backend", "replay", "--replay", Self.example, "--mqtt-node", "n1",
                "--socket", scratch.file("s"),
            ], timeout: 20)
        print("fifo mqtt.ca_file: exit \(run.status) in \(String(format: "%.3f", run.seconds)) s: \(run.stderr)")
        #expect(run.status == 78, "\(run.stderr)")
        #expect(run.stderr.contains("\(config):3:12: mqtt.ca_file: \"\(ca)\" is a FIFO, not a regular file"))
        #expect(run.seconds < Self.promptly)
    }

    /// `beacond venue --ca-file FIFO` / `--password-file FIFO`: a bad flag value (64), at once.
    @Test(arguments: ["--ca-file", "--password-file"])
    func venueRefusesAFIFOForItsFiles(_ flag: String) throws {
        let scratch = try TemporaryDirectory(prefix: "beacond-fifo", short: true)
        let fifo = Self.fifo(scratch, "file")
        let run = try MeasuredRun.beacond(
            ["venue", "--mqtt-url", "mqtts://127.0.0.1:1", "--username", "u", flag, fifo, "--once"], timeout: 20)
        #expect(run.status == 64, "\(run.stderr)")
        #expect(run.stderr.contains("\(flag) \(fifo): is a FIFO, not a regular file"), "\(run.stderr)")
        #expect(run.seconds < Self.promptly)
    }

    /// A capture or a timeline that is a FIFO: `replay` exits 1 (an unreadable capture), `watch
    /// --replay` and `run --replay` 64 (a bad flag value), all at once.
    static let captureCommands: [([String], Int32)] = [
        (["replay"], 1), (["replay", "--timeline", "--remote-timeline", "TIMELINE", "EXAMPLE"], 1),
        (["watch", "--once", "--replay"], 64), (["run", "--backend", "replay", "--replay"], 64),
    ]

    @Test(arguments: captureCommands)
    func aFIFOAsACaptureIsRefusedAtOnce(_ command: [String], status: Int32) throws {
        let scratch = try TemporaryDirectory(prefix: "beacond-fifo", short: true)
        let fifo = Self.fifo(scratch, "input")
        var arguments = command.map { $0 == "TIMELINE" ? fifo : $0 == "EXAMPLE" ? Self.example : $0 }
        if !command.contains("TIMELINE") { arguments.append(fifo) }
        if command[0] == "run" { arguments += ["--socket", scratch.file("s"), "--state-dir", scratch.path] }
        let run = try MeasuredRun.beacond(arguments, timeout: 20)
        print("fifo \(command.joined(separator: " ")): exit \(run.status): \(run.stderr)")
        #expect(run.status == status, "\(run.stderr)")
        #expect(run.stderr.contains(fifo) && run.stderr.contains("is a FIFO, not a regular file"), "\(run.stderr)")
        #expect(run.seconds < Self.promptly)
    }

    /// The config replaced by a FIFO, then SIGHUP: the reload is refused (logged, and in
    /// `status.config`), the socket keeps answering, and SIGTERM still stops the daemon at once.
    /// Before, the reload blocked in open(2) on a thread of the concurrency pool and the daemon
    /// never exited.
    @Test func aReloadOfAConfigReplacedByAFIFOIsRefusedAndSIGTERMStillStops() throws {
        let scratch = try TemporaryDirectory(prefix: "bff", short: true)
        let config = try scratch.write("beacond.yaml", "zones:\n  names:\n    3: Paddock\n")
        let daemon = try DaemonProcess(
            ["--config", config, "--backend", "replay", "--replay", Self.example, "--speed", "max"],
            socket: scratch.file("s"), stateDirectory: scratch.path)
        #expect(daemon.waitForLog("holding the final state"), "\(daemon.logText)")
        #expect(unlink(config) == 0 && mkfifo(config, 0o600) == 0)
        kill(daemon.pid, SIGHUP)
        #expect(daemon.waitForLog("reload failed, keeping the running configuration"), "\(daemon.logText)")
        #expect(daemon.logText.contains("\(config): is a FIFO, not a regular file"), "\(daemon.logText)")
        let status = try #require(daemon.quickStatus(), "status did not answer within 100 ms")
        let part = try #require(status["config"] as? [String: Any])
        #expect(part["reload_failures"] as? Int == 1)
        #expect((part["last_failure"] as? String)?.contains("is a FIFO, not a regular file") == true, "\(part)")
        let stopped = daemon.stop(timeout: 10)
        #expect(stopped != nil && stopped! < Self.promptly, "SIGTERM did not stop the daemon: \(daemon.logText)")
        #expect(daemon.exitStatus == 0)
    }

    /// `--remote-url file://FIFO`: every poll fails at once with the reason in `status`.
    @Test func aFileURLNamingAFIFOFailsEachPollAtOnce() throws {
        let scratch = try TemporaryDirectory(prefix: "bff", short: true)
        let fifo = Self.fifo(scratch, "state.json")
        let daemon = try DaemonProcess(
            [
                "--backend", "replay", "--replay", Self.example, "--speed", "max", "--remote-url", "file://\(fifo)",
                "--poll-interval", "0.2",
            ], socket: scratch.file("s"), stateDirectory: scratch.path)
        var poller: [String: Any] = [:]
        let failed = blockingWaitUntil(within: 10, intervalMicros: 50_000) {
            poller = (daemon.quickStatus()?["remote_poller"] as? [String: Any]) ?? [:]
            return (poller["last_error"] as? String)?.contains("is a FIFO, not a regular file") == true
        }
        #expect(failed, "\(poller) \(daemon.logText)")
        let stopped = daemon.stop(timeout: 10)
        #expect(stopped != nil && stopped! < Self.promptly)
        #expect(daemon.exitStatus == 0)
    }
}
