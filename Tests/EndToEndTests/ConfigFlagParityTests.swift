import Testing

/// Issue 10, item 5, end to end: `run` and `replay --timeline` refuse the same bad fusion flag with
/// the same reason (the config key's parser and range) and exit 64.
@Suite struct ConfigFlagParityTests {
    static var example: String { ReplayCommandTests.example }

    @Test(arguments: [
        ("--min-rssi", "-300", "must be between -127 and 20, found -300"),
        ("--zones", "1,65536", "entry 2: zone 65536 is outside 0...65535"),
        ("--stale-after", "0.01", "must be between 0.1 and 86400 seconds, found 0.01"),
    ])
    func runAndReplayGiveTheSameReason(flag: String, value: String, reason: String) throws {
        let run = try BeacondProcess.run(["run", "--backend", "replay", "--replay", Self.example, flag, value])
        #expect(run.status == 64)
        #expect(run.stderr.contains("beacond run: \(flag) ("))
        #expect(run.stderr.contains("): \(reason)"))
        let replay = try BeacondProcess.run(["replay", "--timeline", flag, value, Self.example])
        #expect(replay.status == 64)
        #expect(replay.stderr.contains(flag))
        #expect(replay.stderr.contains(": \(reason)"))
    }
}
