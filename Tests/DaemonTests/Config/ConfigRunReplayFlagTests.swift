import ArgumentParser
import Testing

@testable import BeacondClient
@testable import BeacondCore
@testable import beacond

/// Issue 10, item 5: `run` and `replay` parse `--min-rssi`, `--zones`, `--stale-after` (and replay's
/// `--max-ttl`) with their config keys' parsers and ranges: the same bad value, the same reason.
@Suite struct ConfigRunReplayFlagTests {
    static let badValues: [(flag: String, text: String, reason: String)] = [
        ("--min-rssi", "-300", "must be between -127 and 20, found -300"),
        ("--min-rssi", "21", "must be between -127 and 20, found 21"),
        ("--min-rssi", "-9223372036854775809", "must be between -127 and 20, found -9223372036854775809"),
        ("--min-rssi", "-80.5", "expected a whole number, found \"-80.5\""),
        ("--zones", "1,65536", "entry 2: zone 65536 is outside 0...65535"),
        ("--zones", "1,x", "entry 2: expected a zone number, found \"x\""),
        ("--stale-after", "0.01", "must be between 0.1 and 86400 seconds, found 0.01"),
        (
            "--stale-after", "9223372036854.775808",
            "must be between 0.1 and 86400 seconds, found 9223372036854.775808"
        ),
        (
            "--stale-after", "1.0000001",
            "\"1.0000001\" has more than 6 decimal places (the resolution is a microsecond)"
        ),
        ("--stale-after", "15s", "expected a number of seconds (like 5 or 2.5), found \"15s\""),
    ]

    /// `run`'s reason: the flag's problem when the overrides are applied.
    static func runReason(_ flag: String, _ text: String) throws -> String? {
        let command = try RunCommand.parse([flag, text])
        do throws(ConfigurationError) {
            _ = try command.overrides.applied(to: DaemonConfiguration())
            return nil
        } catch {
            #expect(error.exitCode == 64)
            #expect(error.problems.map(\.flag) == [flag])
            return error.problems.first?.reason
        }
    }

    /// `replay --timeline`'s message: ArgumentParser's line naming the flag, then the reason.
    static func replayMessage(_ flag: String, _ text: String) -> String? {
        do {
            _ = try ReplayCommand.parse(["--timeline", flag, text, "capture.btsnoop"])
            return nil
        } catch {
            #expect(ReplayCommand.exitCode(for: error) == ExitCode(64))
            return ReplayCommand.message(for: error)
        }
    }

    @Test(arguments: badValues)
    func theSameBadValueGetsTheSameReasonFromRunAndReplay(flag: String, text: String, reason: String) throws {
        #expect(try Self.runReason(flag, text) == reason)
        let message = try #require(Self.replayMessage(flag, text))
        #expect(message.contains(flag))
        #expect(message.hasSuffix(": " + reason), "\(message)")
    }

    /// `run` has no `--max-ttl`; replay's refuses what the file's `fusion.max_ttl` refuses, for the same reason.
    @Test(arguments: ["0.05", "0", "86400.000001", "1e3"])
    func replayMaxTTLHasTheFileKeysReason(text: String) throws {
        let problems = ConfigScratch().problems("fusion:\n  max_ttl: \(text)\n")
        let reason = try #require(problems.first?.reason)
        let message = try #require(Self.replayMessage("--max-ttl", text))
        #expect(message.hasSuffix(": " + reason), "\(message)")
    }

    @Test func goodValuesReachReplaysFusionConfiguration() throws {
        let command = try ReplayCommand.parse([
            "--timeline", "--min-rssi", "-75", "--zones", "1, 0x2", "--stale-after", "2.5", "--max-ttl", "30",
            "--deescalation-hold", "0.5", "--company-id", "0xBEEF", "--policy", "most-severe", "capture.btsnoop",
        ])
        let settings = try command.checkedSettings()
        var fusion = settings.fusionConfiguration()
        fusion.policy = command.policy
        #expect(fusion.minRSSI == -75)
        #expect(fusion.zones == [1, 2])
        #expect(fusion.staleAfter == 2_500_000)
        #expect(fusion.maxTTL == 30_000_000)
        #expect(fusion.deescalationHold == 500_000)
        #expect(fusion.policy == .mostSevere)
        #expect(settings.scanner.companyID == 0xBEEF)
    }

    @Test func replaysDefaultsAreTheConfigKeysDefaults() throws {
        let command = try ReplayCommand.parse(["--timeline", "capture.btsnoop"])
        let settings = try command.checkedSettings()
        #expect(settings.fusionConfiguration() == DaemonConfiguration().fusionConfiguration())
        #expect(settings.scanner.companyID == DaemonConfiguration().scanner.companyID)
    }
}
