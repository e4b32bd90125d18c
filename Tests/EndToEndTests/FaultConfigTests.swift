import BeacondTestSupport
import Foundation
import Testing

/// Issue 14, fault injection: the config file. Hostile files (alias bombs, 100 MB, bytes that are
/// not UTF-8, duplicate keys) make `beacond run` exit 78 naming the file and line, in bounded
/// time and memory (measured from the child's own rusage, as /usr/bin/time does), and a reload
/// with each of them keeps the daemon serving its last good configuration.
@Suite(.serialized) struct FaultConfigTests {
    static var example: String { ReplayCommandTests.example }
    /// Wall time and peak memory a refused file may cost: a start with a good file takes
    /// well under both (its figures are printed beside each case).
    static let maxSeconds = 5.0
    static let maxPeakKilobytes = 64 * 1024

    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        var bytes: @Sendable () -> [UInt8]
        /// `LINE:COLUMN:` (or `LINE:`) expected right after the file name, and text of the reason.
        var place: String
        var reason: String
        var testDescription: String { name }
    }

    static let hundredMegabytes = 100 * 1024 * 1024

    static let cases: [Case] = [
        Case(
            name: "billion laughs", bytes: { Array(SharedFixtures.billionLaughs.utf8) }, place: "1:4:",
            reason: "YAML anchors (&name) are not accepted"),
        Case(
            name: "alias bomb in flow style on one line",
            bytes: { Array("fusion: {allow: &a [a, a], zones: [*a, *a, *a]}\n".utf8) }, place: "1:17:",
            reason: "YAML anchors (&name) are not accepted"),
        Case(
            name: "merge-key bomb",
            bytes: { Array("# venue\nfusion:\n  <<: *base\n  policy: safety\n".utf8) }, place: "3:7:",
            reason: "YAML aliases (*name) are not accepted"),
        Case(
            name: "quadratic alias fan-out",
            bytes: {
                let long = String(repeating: "x", count: 100_000)
                let aliases = Array(repeating: "*s", count: 5_000).joined(separator: ",")
                return Array("zones:\n  names: {1: !!str &s \(long)}\nfusion:\n  allow: [\(aliases)]\n".utf8)
            }, place: "2:20:", reason: "YAML anchors (&name) are not accepted"),
        Case(
            name: "100 MB file", bytes: { hugeFile() }, place: "43692:24:",
            reason: "is larger than 1024 KiB (the limit is passed here)"),
        Case(
            name: "non-UTF-8 byte in a value",
            bytes: {
                Array("fusion:\n  policy: safety\nzones:\n  names:\n    1: Gr".utf8) + [0xFF] + Array("and\n".utf8)
            },
            place: "5:10:", reason: "is not valid UTF-8: byte 0xFF at offset 50"),
        Case(
            name: "UTF-16 file", bytes: { [0xFF, 0xFE] + Array("f\0u\0".utf8) }, place: "1:1:",
            reason: "is not valid UTF-8: byte 0xFF at offset 0"),
        Case(
            name: "duplicate key in a mapping",
            bytes: { Array("fusion:\n  max_ttl: 30\n  policy: safety\n  max_ttl: 600\n".utf8) }, place: "4:3:",
            reason: "duplicate key \"max_ttl\" (first at line 2)"),
        Case(
            name: "duplicate section",
            bytes: { Array("fusion:\n  max_ttl: 30\nscanner:\n  backend: replay\nfusion:\n  policy: safety\n".utf8) },
            place: "5:1:", reason: "duplicate key \"fusion\" (first at line 1)"),
        Case(
            name: "duplicate key spelt with a tag",
            bytes: { Array("fusion:\n  max_ttl: 30\n  !custom max_ttl: 600\n".utf8) }, place: "3:3:",
            reason: "fusion.max_ttl: duplicate key (first at line 2)"),
        Case(
            name: "duplicate key spelt dotted at the top level",
            bytes: { Array("fusion:\n  max_ttl: 30\nfusion.max_ttl: 600\n".utf8) }, place: "3:1:",
            reason: "fusion.max_ttl: duplicate key (first at line 2)"),
    ]

    /// 100 MB of plausible YAML: an allow list, one address per line (24 bytes a line).
    static func hugeFile() -> [UInt8] {
        let head = Array("fusion:\n  allow:\n".utf8)
        let line = Array("    - C0:FF:EE:00:00:01\n".utf8)
        var bytes = head
        bytes.reserveCapacity(hundredMegabytes)
        while bytes.count < hundredMegabytes { bytes += line }
        return bytes
    }

    static func write(_ bytes: [UInt8], name: String) throws -> String {
        let path = BeacondProcess.temporaryFile("fault-config-\(name)")
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test(arguments: cases)
    func aHostileFileExits78WithFileAndLineInBoundedTimeAndMemory(_ hostile: Case) throws {
        let config = try Self.write(hostile.bytes(), name: hostile.name.replacingOccurrences(of: " ", with: "-"))
        defer { unlink(config) }
        let run = try MeasuredRun.beacond(
            ["run", "--config", config, "--backend", "replay", "--replay", Self.example, "--socket", config + ".sock"])
        print(
            """
            fault config \(hostile.name): exit \(run.status), \(String(format: "%.3f", run.seconds)) s, \
            peak RSS \(run.peakKilobytes) KiB: \(run.stderr.split(separator: "\n").first ?? "")
            """)
        #expect(run.status == 78, "\(run.stderr)")
        #expect(run.stderr.contains("\(config):\(hostile.place) "), "\(run.stderr)")
        #expect(run.stderr.contains(hostile.reason), "\(run.stderr)")
        #expect(run.seconds < Self.maxSeconds)
        #expect(run.peakKilobytes < Self.maxPeakKilobytes)
        #expect(!FileManager.default.fileExists(atPath: config + ".sock"))
    }

    /// The baseline the bounds are read against: a good file, read in full, then a start refused
    /// for a capture that does not exist (exit 64, a bad `--replay`).
    @Test func aGoodFileCostsTheSameAsARefusedOne() throws {
        let config = try Self.write(Array("fusion:\n  policy: safety\n".utf8), name: "good")
        defer { unlink(config) }
        let run = try MeasuredRun.beacond(
            [
                "run", "--config", config, "--backend", "replay", "--replay", config + ".missing", "--socket",
                config + ".s",
            ])
        print("fault config baseline: exit \(run.status), \(run.seconds) s, peak RSS \(run.peakKilobytes) KiB")
        #expect(run.status == 64, "\(run.stderr)")
        #expect(run.peakKilobytes < Self.maxPeakKilobytes)
    }

    /// SIGHUP with each hostile file in turn: each reload fails with the file and line logged, the
    /// daemon keeps serving its last good configuration, and no client is dropped.
    @Test func reloadingEachHostileFileKeepsTheRunningConfiguration() throws {
        let directory = try TemporaryDirectory(prefix: "bfc", short: true)
        let config = directory.path + "/beacond.yaml"
        try "zones:\n  names:\n    3: Paddock\n".write(toFile: config, atomically: true, encoding: .utf8)
        let daemon = try DaemonProcess(
            ["--config", config, "--backend", "replay", "--replay", Self.example, "--speed", "max"],
            socket: directory.path + "/s", stateDirectory: directory.path)
        #expect(daemon.waitForLog("holding the final state"))
        let client = try WatchingClient(path: daemon.socket)
        for (index, hostile) in Self.cases.enumerated() {
            let staged = directory.path + "/staged.yaml"
            try Data(hostile.bytes()).write(to: URL(fileURLWithPath: staged))
            #expect(rename(staged, config) == 0)
            kill(daemon.pid, SIGHUP)
            let failures = blockingWaitUntil(within: 10) {
                daemon.count("reload failed, keeping the running configuration") == index + 1
            }
            #expect(failures, "\(hostile.name): \(daemon.logText)")
            let failure = daemon.logLines.last { $0.contains("reload failed") } ?? ""
            #expect(failure.contains("\(config):\(hostile.place)"), "\(failure)")
        }
        #expect(daemon.quickStatus() != nil, "status did not answer within 100 ms")
        #expect(daemon.count("config reloaded") == 0)
        // The first file again: nothing changed, so the first file's configuration was in force.
        try "zones:\n  names:\n    3: Paddock\n".write(toFile: config, atomically: true, encoding: .utf8)
        kill(daemon.pid, SIGHUP)
        #expect(daemon.waitForLog("reload: nothing changed"), "\(daemon.logText)")
        #expect(client.ping())
        #expect(!client.hungUp && !client.saidBye)
        #expect(daemon.stop() != nil)
        #expect(daemon.exitStatus == 0)
    }
}
