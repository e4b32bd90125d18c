import BeacondTestSupport
import Foundation
import Testing

/// Signed v3 frames through the binary (docs/security.md, "Signed frames (v3)"): `keys new`,
/// `example-capture --key-file`, `replay --timeline --key-file` and `run --key-file`, SIGHUP
/// reading the key file again, and key files that must be refused.
@Suite(.serialized) struct SignedFramesTests {
    /// A key file made by `beacond keys new`, mode 0600.
    static func keyFile(_ name: String, id: Int = 1) throws -> String {
        let path = BeacondProcess.temporaryFile(name)
        let made = try BeacondProcess.run(["keys", "new", "--id", String(id)])
        #expect(made.status == 0)
        try made.stdout.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o600)
        return path
    }

    static let keys: String = (try? keyFile("venue.keys")) ?? "/nonexistent"
    static let signed: String = {
        let path = BeacondProcess.temporaryFile("race-weekend-v3.btsnoop")
        _ = try? BeacondProcess.run(["example-capture", "--key-file", keys, path])
        return path
    }()

    /// The signed example publishes what the unsigned one does, each beacon state marked signed.
    @Test func theSignedExampleReplaysLikeTheUnsignedOneAndSaysSigned() throws {
        let plain = try BeacondProcess.run(["replay", "--timeline", ReplayCommandTests.example])
        let verified = try BeacondProcess.run(["replay", "--timeline", "--key-file", Self.keys, Self.signed])
        #expect(plain.status == 0 && verified.status == 0, "\(verified.stderr)")
        let expected = plain.lines.map { $0.contains("  beacon ") ? $0 + " signed" : $0 }
        #expect(verified.lines == expected)
        #expect(verified.lines.count > 5)
        #expect(verified.stderr.contains("signed: 728 accepted;"), "\(verified.stderr)")
        let json = try BeacondProcess.run(["replay", "--timeline", "--json", "--key-file", Self.keys, Self.signed])
        let beacons = try json.jsonLines().filter { $0["source"] as? String == "beacon" }
        #expect(!beacons.isEmpty && beacons.allSatisfy { $0["signed"] as? Bool == true })
    }

    /// Without the key, or with another venue's, no signed frame counts and nothing is published.
    @Test func withoutTheRightKeyNothingCounts() throws {
        let keyless = try BeacondProcess.run(["replay", "--timeline", Self.signed])
        #expect(keyless.status == 0 && keyless.lines.isEmpty)
        #expect(keyless.stderr.contains("rejected: unknown_key=728"), "\(keyless.stderr)")
        let other = try Self.keyFile("other-venue.keys")
        let forged = try BeacondProcess.run(["replay", "--timeline", "--key-file", other, Self.signed])
        #expect(forged.status == 0 && forged.lines.isEmpty)
        #expect(forged.stderr.contains("rejected: bad_tag=728"), "\(forged.stderr)")
        // The unsigned example with unsigned frames rejected: nothing counts either.
        let rejected = try BeacondProcess.run([
            "replay", "--timeline", "--unsigned", "reject", "--key-file", Self.keys, ReplayCommandTests.example,
        ])
        #expect(rejected.lines.allSatisfy { $0.hasSuffix("UNKNOWN  none") }, "\(rejected.stdout)")
        #expect(rejected.stderr.contains("728 unsigned rejected"), "\(rejected.stderr)")
    }

    /// A kiosk's key file of day keys (`keys day`) verifies the event's days and nothing else.
    @Test func dayKeysVerifyTheirDaysOnly() throws {
        for (from, counted) in [("2026-05-15", true), ("2026-05-17", false)] {
            let made = try BeacondProcess.run(["keys", "day", "--key-file", Self.keys, "--from", from, "--days", "2"])
            #expect(made.status == 0, "\(made.stderr)")
            #expect(made.lines.filter { $0.hasPrefix("day-key 1 ") }.count == 2)
            #expect(!made.stdout.contains("\nkey "), "a day key file holds no venue key")
            let path = BeacondProcess.temporaryFile("day-\(from).keys")
            try made.stdout.write(toFile: path, atomically: true, encoding: .utf8)
            chmod(path, 0o600)
            let replay = try BeacondProcess.run(["replay", "--timeline", "--key-file", path, Self.signed])
            #expect(replay.stderr.contains(counted ? "signed: 728 accepted;" : "unknown_key=728"), "\(replay.stderr)")
        }
        let bad = try BeacondProcess.run(["keys", "day", "--key-file", Self.keys, "--from", "2026-02-30"])
        #expect(bad.status == 64 && bad.stderr.contains("--from 2026-02-30 is not a date YYYY-MM-DD"))
    }

    /// A key file its group or others may read, or one that is not a regular file, is a
    /// configuration error (78), naming the file and its mode.
    @Test func aKeyFileOthersMayReadIsRefused() throws {
        let readable = try Self.keyFile("readable.keys")
        chmod(readable, 0o640)
        for arguments in [
            ["replay", "--timeline", "--key-file", readable, Self.signed],
            ["run", "--backend", "replay", "--replay", Self.signed, "--key-file", readable],
            ["example-capture", "--key-file", readable, BeacondProcess.temporaryFile("never.btsnoop")],
            ["beacon", "--zone", "7", "--mode", "red_flag", "--frame-version", "v3", "--key-file", readable],
        ] {
            let result = try BeacondProcess.run(arguments)
            #expect(result.status == 78, "\(arguments[0]): \(result.stderr)")
            #expect(
                result.stderr.contains("key file \(readable): has mode 0640: its group or others may use it"),
                "\(arguments[0]): \(result.stderr)")
        }
        let directory = try BeacondProcess.run(["replay", "--timeline", "--key-file", "/tmp", Self.signed])
        #expect(directory.status == 78 && directory.stderr.contains("is a directory, not a regular file"))
        let transmitter = try BeacondProcess.run([
            "beacon", "--zone", "7", "--mode", "red_flag", "--frame-version", "v3",
        ])
        #expect(transmitter.status == 64 && transmitter.stderr.contains("signs frames: give --key-file"))
    }

    /// `run` with the key file: the signed claim is published and listed as signed; its sender is
    /// listed with its mark, kept in the state directory at shutdown. SIGHUP reads the key file
    /// again: with another venue's key in it, the same frames are forged.
    @Test func runVerifiesSignedFramesAndReloadsTheKeyFile() throws {
        let keys = try Self.keyFile("run.keys")
        try FileManager.default.removeItem(atPath: keys)
        try FileManager.default.copyItem(atPath: Self.keys, toPath: keys)
        chmod(keys, 0o600)
        let daemon = try DaemonProcess([
            "--backend", "replay", "--replay", Self.signed, "--speed", "20", "--key-file", keys, "--clock-window", "60",
        ])
        #expect(daemon.waitForLog("listening on"), "\(daemon.logText)")
        #expect(blockingWaitUntil(within: 10) { DaemonProcess.state(of: daemon.quickStatus())?.mode == "normal" })
        let status = try daemon.status()
        let signed = try #require(status["signed"] as? [String: Any])
        #expect((signed["accepted"] as? Int ?? 0) > 0)
        #expect(signed["key_file"] as? String == keys && signed["key_ids"] as? [Int] == [1])
        let state = try #require(status["state"] as? [String: Any])
        let beacon = try #require(state["beacon"] as? [String: Any])
        #expect(beacon["signed"] as? Bool == true, "\(beacon)")
        let senders = try #require(signed["senders"] as? [[String: Any]])
        #expect(Set(senders.compactMap { $0["source"] as? String }).isSuperset(of: ["circuit 1 zone 1"]))

        // Another venue's key under the same id: from now on the capture's frames are forged.
        let other = try Self.keyFile("run-other.keys")
        try FileManager.default.removeItem(atPath: keys)
        try FileManager.default.copyItem(atPath: other, toPath: keys)
        chmod(keys, 0o600)
        kill(daemon.pid, SIGHUP)
        #expect(daemon.waitForLog("reload: v3 keys read again from \(keys)"), "\(daemon.logText)")
        #expect(daemon.waitForLog("forged frame: zone "), "\(daemon.logText)")
        #expect(daemon.stop() != nil)
        let marks = try String(contentsOfFile: daemon.stateDirectory + "/signed-marks", encoding: .utf8)
        #expect(marks.contains("\ncircuit 1 1 "), "\(marks)")
    }
}
