import BLEPayload
import BeacondTestSupport
import Foundation
import Testing

/// `beacond replay` and `beacond run --backend replay` on captures whose times sit at the ends of
/// Int64 microseconds, jump from one end to the other, or run backwards: they never trap.
@Suite(.serialized) struct CaptureTimeExtremesTests {
    /// Int64.min µs and Int64.max µs, as ISO 8601 and as JSON seconds.
    static let minText = "-290308-12-21T19:59:05.224192Z"
    static let maxText = "+294247-01-10T04:00:54.775807Z"
    static let minJSON = "-9223372036854.775808"
    static let maxJSON = "9223372036854.775807"

    static func h4(zone: UInt16, mode: GeoRacingMode, sequence: UInt16, ttl: UInt8) -> [UInt8] {
        let report = OwnedAdvertisingReport(
            kind: .advNonconnInd, addressType: .publicDevice,
            address: BluetoothAddress(rawValue: 0xC0_FF_EE_00_00_00 | UInt64(zone)), rssi: -60,
            data: GeoRacingSignal.circuit(zone: zone, mode: mode, sequence: sequence, ttl: ttl).advertisingData())
        return HCIEventEncoder.h4((try? HCIEventEncoder.advertisingReport([report])) ?? [])
    }

    static func btsnoop(_ name: String, _ records: [(Int64, [UInt8])]) -> String {
        var bytes = BTSnoopWriter.fileHeader()
        for (stamp, packet) in records { BTSnoopWriter.appendRecord(to: &bytes, timestamp: stamp, packet: packet) }
        let path = BeacondProcess.temporaryFile(name)
        _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
        return path
    }

    /// Red flag in zone 3 (TTL 10) at Int64.min, again 1 s later.
    static let minimum = btsnoop(
        "extreme-min.btsnoop",
        [
            (.min, h4(zone: 3, mode: .redFlag, sequence: 1, ttl: 10)),
            (.min + 1_000_000, h4(zone: 3, mode: .redFlag, sequence: 2, ttl: 10)),
        ])

    /// Near-maximum time plus a TTL: red flag (TTL 255) 1 s before Int64.max, evacuation at Int64.max.
    static let maximum: String = {
        var bytes = PcapngWriter.sectionHeader() + PcapngWriter.interfaceDescription(linkType: 187)
        bytes += PcapngWriter.enhancedPacket(
            ticks: UInt64(Int64.max - 1_000_000),
            packet: h4(zone: 3, mode: .redFlag, sequence: 1, ttl: 255))
        bytes += PcapngWriter.enhancedPacket(
            ticks: UInt64(Int64.max),
            packet: h4(zone: 1, mode: .evacuation, sequence: 1, ttl: 255))
        let path = BeacondProcess.temporaryFile("extreme-max.pcapng")
        _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
        return path
    }()

    /// From Int64.min to the latest btsnoop time (year 292,276) and back again.
    static let jump = btsnoop(
        "extreme-jump.btsnoop",
        [
            (.min, h4(zone: 3, mode: .redFlag, sequence: 1, ttl: 10)),
            (BTSnoopWriter.latestTimestamp, h4(zone: 1, mode: .evacuation, sequence: 1, ttl: 255)),
            (.min, h4(zone: 2, mode: .normal, sequence: 1, ttl: 10)),
        ])

    @Test func tableFormatsTheExtremes() throws {
        let result = try BeacondProcess.run(["replay", Self.minimum, Self.maximum, Self.jump])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.lines.count == 1 + 7)
        #expect(result.lines[1].hasPrefix(Self.minText))
        #expect(result.lines[2].hasPrefix("-290308-12-21T19:59:06.224192Z"))
        #expect(result.lines[3].hasPrefix("+294247-01-10T04:00:53.775807Z"))
        #expect(result.lines[4].hasPrefix(Self.maxText))
        #expect(result.lines[6].hasPrefix("+292276-12-28T04:00:54.775807Z"))
        #expect(result.lines[4].contains("EVACUATION"))
    }

    @Test func jsonPrintsTheExtremesExactly() throws {
        let result = try BeacondProcess.run(["replay", "--json", Self.minimum, Self.maximum, Self.jump])
        #expect(result.status == 0, "\(result.stderr)")
        let stamps = result.lines.map { line in
            line.split(separator: ",").first.map { String($0.dropFirst(#"{"ts":"#.count)) } ?? ""
        }
        #expect(
            stamps == [
                Self.minJSON, "-9223372036853.775808", "9223372036853.775807", Self.maxJSON,
                Self.minJSON, "9161203780854.775807", Self.minJSON,
            ])
        #expect(try result.jsonLines().count == 7)
    }

    @Test func timelineAtTheMinimumExpiresOnTime() throws {
        let result = try BeacondProcess.run(["replay", "--timeline", Self.minimum])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.lines == [
                "-290308-12-21T19:59:05.224Z  RED FLAG  beacon zone 3",
                "-290308-12-21T19:59:16.224Z  UNKNOWN  none",
            ])
    }

    @Test func timelineNearTheMaximumWithTTL255NeverTraps() throws {
        let result = try BeacondProcess.run(["replay", "--timeline", "--json", Self.maximum])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = try result.jsonLines()
        // Both expiries saturate at Int64.max, the last representable instant, where both have ended:
        // the evacuation received at Int64.max has no time left to be in force.
        #expect(lines.map { $0["mode"] as? String } == ["red_flag", "unknown"])
        #expect(result.stdout.hasPrefix(#"{"ts":9223372036853.775807,"#))
        #expect(result.lines.last?.hasPrefix(#"{"ts":\#(Self.maxJSON),"#) == true)
        let text = try BeacondProcess.run(["replay", "--timeline", Self.maximum])
        #expect(
            text.lines == [
                "+294247-01-10T04:00:53.775Z  RED FLAG  beacon zone 3",
                "+294247-01-10T04:00:54.775Z  UNKNOWN  none",
            ])
    }

    @Test func timelineJumpingFromExtremeToExtremeAndBack() throws {
        let result = try BeacondProcess.run(["replay", "--timeline", "--json", Self.jump])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = try result.jsonLines()
        #expect(lines.prefix(3).map { $0["mode"] as? String } == ["red_flag", "unknown", "evacuation"])
        #expect(result.stdout.hasPrefix(#"{"ts":\#(Self.minJSON),"#))
        // Time never runs backwards in the output: the late record at Int64.min is taken at the latest time.
        let stamps = result.lines.compactMap { Decimal(string: String($0.dropFirst(6).prefix { $0 != "," })) }
        #expect(stamps.count == result.lines.count)
        #expect(stamps == stamps.sorted())
        #expect(result.stderr.contains("3 GeoRacing signals"))
    }

    @Test(arguments: ["minimum", "maximum", "jump"])
    func runAtMaximumSpeedHoldsTheFinalState(capture: String) throws {
        let path = capture == "minimum" ? Self.minimum : capture == "maximum" ? Self.maximum : Self.jump
        let daemon = try DaemonProcess(["--backend", "replay", "--replay", path, "--speed", "max"])
        #expect(daemon.waitForLog("holding the final state"), "\(daemon.logText)")
        let status = try daemon.status()
        let state = try #require(status["state"] as? [String: Any])
        let counters = try #require(status["counters"] as? [String: Any])
        #expect(counters["signals"] as? Int == (capture == "jump" ? 3 : 2))
        // Pending expiries run to the end (saturated ones at Int64.max): nothing stays in force.
        #expect(state["mode"] as? String == "unknown")
        #expect((status["beacons"] as? [Any])?.count == (capture == "jump" ? 3 : capture == "maximum" ? 2 : 1))
        #expect(daemon.stop() != nil)
        #expect(daemon.process.terminationStatus == 0, "\(daemon.logText)")
    }

    @Test func runAtFiniteSpeedWaitsOutAnExtremeGapWithoutTrapping() throws {
        let daemon = try DaemonProcess(["--backend", "replay", "--replay", Self.jump, "--speed", "1"])
        #expect(daemon.waitForLog("listening on"))
        // The first frame is published; then the replay waits out the gap.
        _ = blockingWaitUntil(intervalMicros: 50_000) {
            ((try? daemon.status())?["state"] as? [String: Any])?["mode"] as? String == "red_flag"
        }
        let state = try #require(try daemon.status()["state"] as? [String: Any])
        #expect(state["mode"] as? String == "red_flag")
        #expect(daemon.stop() != nil)
        #expect(daemon.process.terminationStatus == 0, "\(daemon.logText)")
    }

    @Test func loopStopsWhenTheShiftedTimeWouldPassInt64Max() throws {
        let daemon = try DaemonProcess(["--backend", "replay", "--replay", Self.maximum, "--speed", "1", "--loop"])
        #expect(daemon.waitForLog("looping stops after pass 2"), "\(daemon.logText)")
        #expect(daemon.waitForLog("holding the final state"))
        let state = try #require(try daemon.status()["state"] as? [String: Any])
        #expect(state["mode"] as? String == "unknown")
        #expect(daemon.stop() != nil)
        #expect(daemon.process.terminationStatus == 0, "\(daemon.logText)")
    }

    @Test func outOfRangeRecordIsACaptureErrorAfterEverythingBeforeIt() throws {
        var bytes = BTSnoopWriter.fileHeader()
        let first = Self.h4(zone: 1, mode: .normal, sequence: 1, ttl: 10)
        BTSnoopWriter.appendRecord(to: &bytes, timestamp: 0, packet: first)
        let second = bytes.count
        let beyond = Self.h4(zone: 1, mode: .normal, sequence: 2, ttl: 10)
        BTSnoopWriter.appendRecord(to: &bytes, timestamp: .max, packet: beyond)
        let path = BeacondProcess.temporaryFile("out-of-range.btsnoop")
        _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
        for arguments in [["--json"], [], ["--timeline"], ["--timeline", "--json"]] {
            let result = try BeacondProcess.run(["replay"] + arguments + [path])
            #expect(result.status == 1, "\(arguments)")
            #expect(
                result.stderr.contains("\(path): record 1 at byte \(second): timestamp out of range"),
                "\(arguments): \(result.stderr)")
            #expect(
                result.stdout.contains("1970-01-01T00:00:00.000") || result.stdout.contains(#""ts":0.000000"#),
                "\(arguments): \(result.stdout)")
        }
        // The daemon publishes what came before the record, then stops with the capture error.
        let run = try BeacondProcess.run([
            "run", "--socket", BeacondProcess.temporaryFile("oor.sock"),
            "--state-dir", BeacondProcess.temporaryFile(""), "--backend", "replay",
            "--replay", path, "--speed", "max",
        ])
        #expect(run.status == 1)
        #expect(run.stderr.contains("mode=normal source=beacon zone=1"), "\(run.stderr)")
        #expect(run.stderr.contains("\(path): record 1 at byte \(second): timestamp out of range"))
    }

    /// A capture whose time runs backwards, looped at speed 1: the clock must not busy-wait and the
    /// log must stay short. Before the fix the loop shift was negative and the replay spun at 100 %.
    @Test func backwardsCaptureLoopedAtSpeedOneUsesLittleCPU() throws {
        let base: Int64 = 1_778_932_800_000_000
        let path = Self.btsnoop(
            "backwards.btsnoop",
            [
                (base + 100_000_000, Self.h4(zone: 1, mode: .normal, sequence: 1, ttl: 10)),
                (base + 50_000_000, Self.h4(zone: 1, mode: .normal, sequence: 2, ttl: 10)),
                (base, Self.h4(zone: 1, mode: .normal, sequence: 3, ttl: 10)),
            ])
        let daemon = try DaemonProcess(["--backend", "replay", "--replay", path, "--speed", "1", "--loop"])
        #expect(daemon.waitForLog("listening on"))
        let pid = daemon.process.processIdentifier
        let cpuBefore = try Self.cpuSeconds(pid)
        let started = Date()
        // Real time on purpose: the CPU the daemon uses while it waits is what is measured.
        usleep(2_500_000)
        let cpu = try Self.cpuSeconds(pid) - cpuBefore
        let wall = Date().timeIntervalSince(started)
        #expect(cpu < 0.3 * wall, "CPU \(cpu) s in \(wall) s")
        let lines = daemon.logText.split(separator: "\n")
        #expect(lines.count < 40, "\(lines.count) log lines")
        #expect(lines.filter { $0.contains("replay pass") }.count <= 1)
        #expect(daemon.stop() != nil)
        #expect(daemon.process.terminationStatus == 0)
    }

    /// utime + stime of `pid`, from /proc/PID/stat (fields 14 and 15, in clock ticks).
    static func cpuSeconds(_ pid: Int32) throws -> Double {
        let text = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        let afterName = try #require(text.range(of: ")", options: .backwards)).upperBound
        let fields = text[afterName...].split(separator: " ")
        // fields[0] is field 3 (state); utime is field 14, stime field 15.
        let ticks = try #require(Double(fields[11])) + (try #require(Double(fields[12])))
        return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    @Test func remoteTimelineNumbersOutOfRangeNameFileAndLine() throws {
        let cases = [
            (#"{"ts": 1e400, "error": "x"}"#, "not valid JSON"),
            (#"{"ts": NaN, "error": "x"}"#, "not valid JSON"),
            (#"{"ts": -1, "error": "x"}"#, #""ts" -1 is out of range"#),
            (#"{"ts": 1e13, "error": "x"}"#, "is out of range: Unix seconds from 0 to 1e12"),
            (#"{"ts": 99999999999999999999999, "error": "x"}"#, "is out of range"),
            (#"{"ts": -1e300, "error": "x"}"#, "is out of range"),
            (#"{"ts": true, "error": "x"}"#, #""ts" must be a number of Unix seconds"#),
        ]
        for (index, (line, reason)) in cases.enumerated() {
            let remote = BeacondProcess.temporaryFile("extreme-remote-\(index).jsonl")
            try "{\"ts\": 0, \"error\": \"first\"}\n\(line)\n".write(toFile: remote, atomically: true, encoding: .utf8)
            let result = try BeacondProcess.run(["replay", "--timeline", "--remote-timeline", remote, Self.minimum])
            #expect(result.status == 1, "\(line)")
            #expect(result.stderr.contains("\(remote):2: ") && result.stderr.contains(reason), "\(result.stderr)")
            #expect(result.stdout.isEmpty)
        }
        let huge = BeacondProcess.temporaryFile("extreme-remote-huge.jsonl")
        _ = FileManager.default.createFile(atPath: huge, contents: nil)
        #expect(truncate(huge, (64 << 20) + 1) == 0)
        let tooBig = try BeacondProcess.run(["replay", "--timeline", "--remote-timeline", huge, Self.minimum])
        #expect(tooBig.status == 1)
        #expect(tooBig.stderr.contains("\(huge):0: 67108865 bytes: larger than the 67108864-byte limit"))
        try? FileManager.default.removeItem(atPath: huge)
        let edges = BeacondProcess.temporaryFile("extreme-remote-edges.jsonl")
        try "{\"ts\": 0, \"error\": \"a\"}\n{\"ts\": 1e12, \"state\": {\"mode\": \"RED\"}}\n"
            .write(toFile: edges, atomically: true, encoding: .utf8)
        let result = try BeacondProcess.run([
            "replay", "--timeline", "--json", "--remote-timeline", edges,
            Self.maximum,
        ])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("1 remote fetches, 1 failed"))
    }
}
