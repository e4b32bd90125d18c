import BeacondTestSupport
import Foundation
import Testing

/// Issue 9, end to end: bad numbers and hostile YAML give the README's exit codes (64 bad usage,
/// 78 bad configuration) with their place, never a trap (132) or a hang; a reload keeps running.
@Suite(.serialized) struct ConfigExitCodeTests {
    static var example: String { ReplayCommandTests.example }
    static let hugeDuration = "9223372036854.775808"

    static func writeConfig(_ name: String, _ text: String) throws -> String {
        let path = BeacondProcess.temporaryFile(name)
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func aHugeDurationInTheFileExits78NamingFileLineAndKey() throws {
        let config = try Self.writeConfig("huge.yaml", "remote:\n  timeout: \(Self.hugeDuration)\n")
        let result = try BeacondProcess.run(
            ["run", "--config", config, "--backend", "replay", "--replay", Self.example])
        #expect(result.status == 78)
        #expect(
            result.stderr.contains(
                "\(config):2:12: remote.timeout: must be between 0.1 and 300 seconds, found \(Self.hugeDuration)"))
    }

    @Test(arguments: ["--timeout", "--stale-after", "--poll-interval", "--deescalation-hold", "--speed"])
    func aHugeDurationFlagExits64NamingTheFlag(flag: String) throws {
        let result = try BeacondProcess.run([
            "run", "--backend", "replay", "--replay", Self.example,
            flag, Self.hugeDuration,
        ])
        #expect(result.status == 64)
        #expect(result.stderr.contains("beacond run: \(flag) ("))
        #expect(result.stderr.contains(Self.hugeDuration))
    }

    @Test(arguments: [
        ["replay", "--timeline", "--max-ttl"], ["replay", "--timeline", "--stale-after"],
        ["replay", "--timeline", "--deescalation-hold"], ["status", "--timeout"], ["scan", "--duration"],
    ])
    func otherCommandsRefuseAHugeDurationWith64(arguments: [String]) throws {
        var command = arguments + [Self.hugeDuration]
        if arguments[0] == "replay" { command.append(Self.example) }
        let result = try BeacondProcess.run(command)
        #expect(result.status == 64)
        #expect(result.stderr.contains("\(arguments[arguments.count - 1])"))
        #expect(result.stderr.contains("seconds"))
    }

    @Test func replayTimelineTakesTheDeescalationHold() throws {
        let result = try BeacondProcess.run(["replay", "--timeline", "--deescalation-hold", "2.5", Self.example])
        #expect(result.status == 0)
        // Zone 2's return to normal (a newer sequence at 12:01:20.251) waits for the 2.5 s hold.
        #expect(result.stdout.contains("2026-05-16T12:01:22.751Z  NORMAL  beacon zone 2"))
        let refused = try BeacondProcess.run([
            "replay", "--timeline", "--min-rssi", "-9223372036854775809",
            Self.example,
        ])
        #expect(refused.status == 64)
        #expect(refused.stderr.contains("must be between -127 and 20"))
    }

    static var billionLaughs: String { SharedFixtures.billionLaughs }

    @Test func aYAMLBombExits78AtOnce() throws {
        let config = try Self.writeConfig("bomb.yaml", Self.billionLaughs)
        let started = Date()
        let result = try BeacondProcess.run(
            ["run", "--config", config, "--backend", "replay", "--replay", Self.example])
        #expect(Date().timeIntervalSince(started) < 5)
        #expect(result.status == 78)
        #expect(result.stderr.contains("\(config):1:4: YAML anchors (&name) are not accepted"))
    }

    @Test func aReloadWithABombOrAHugeDurationKeepsRunningAndStopsCleanly() throws {
        let config = try Self.writeConfig("reload-bad.yaml", "fusion:\n  policy: safety\n")
        let (daemon, client) = try DaemonProcess.holdingReplay(config: config)
        try Self.billionLaughs.write(toFile: config, atomically: true, encoding: .utf8)
        kill(daemon.process.processIdentifier, SIGHUP)
        #expect(daemon.waitForLog("YAML anchors (&name) are not accepted", timeout: 5))
        try "fusion:\n  max_ttl: \(Self.hugeDuration)\n".write(toFile: config, atomically: true, encoding: .utf8)
        kill(daemon.process.processIdentifier, SIGHUP)
        #expect(daemon.waitForLog("fusion.max_ttl: must be between 0.1 and 86400 seconds", timeout: 5))
        client.send(#"{"cmd":"ping"}"#)
        #expect(client.next(type: "pong") != nil)
        let seconds = try #require(daemon.stop(signal: SIGTERM))
        #expect(seconds < 2)
        #expect(client.next(type: "bye") != nil)
        #expect(daemon.process.terminationStatus == 0)
        #expect(!FileManager.default.fileExists(atPath: daemon.socket))
    }
}
