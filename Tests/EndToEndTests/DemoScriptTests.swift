import BeacondTestSupport
import Foundation
import Testing

/// Issue 26: `make demo` shows the flag first, and `make demo-live` leaves a daemon to explore that
/// follows race control's file and stops with `make demo-stop`. Both scripts with the built binary.
@Suite struct DemoScriptTests {
    static func script(_ name: String) -> URL { RepositoryPaths.root.appendingPathComponent("scripts/" + name) }

    static func outDirectory(_ name: String) -> String {
        BeacondProcess.temporaryFile("\(name)-\(UUID().uuidString.prefix(8).lowercased())")
    }

    @Test func theDemoOpensWithTheKiosksFlagsAndStaysShort() throws {
        let out = Self.outDirectory("demo")
        defer { try? FileManager.default.removeItem(atPath: out) }
        // At 10x each flag shows for at least 4 s, room for a loaded machine to catch it.
        let demo = try BeacondProcess.run(
            Self.script("demo.sh"), [BeacondProcess.executable.path, out], environment: ["DEMO_SPEED": "10"])
        #expect(demo.status == 0, "\(demo.stderr)")
        let lines = demo.lines
        #expect(lines.count < 100)
        #expect(lines.prefix(20).contains { $0.contains("████") }, "\(demo.stdout)")
        let headings = lines.filter { $0.hasPrefix("== ") }.map { String($0.dropFirst(3).prefix(12)) }
        #expect(
            headings == [
                "beacond demo", "1/4 SAFETY C", "2/4 RED FLAG", "3/4 EVACUATE", "4/4 NO SIGNA", "the race as ",
                "the daemon's", "next: 'make ",
            ])
        for (flag, heading) in [("SC", "1/4"), ("RED FLAG", "2/4"), ("EVACUATE", "3/4"), ("NO SIGNAL", "4/4")] {
            let start = try #require(lines.firstIndex { $0.hasPrefix("== \(heading)") })
            let frame = lines[(start + 1)...].prefix { !$0.hasPrefix("== ") }
            #expect(frame.last?.trimmingCharacters(in: .whitespaces) == flag)
        }
        #expect(demo.stdout.contains("Replay finished: the capture has no more beacons"))
        #expect(demo.stdout.contains("scanner   replay finished"))
        #expect(!demo.stdout.contains("Scanner none"))
    }

    @Test func theLiveDemoFollowsRaceControlsFileAndStops() throws {
        let out = Self.outDirectory("demo-live")
        let beacond = BeacondProcess.executable.path
        defer {
            _ = try? BeacondProcess.run(Self.script("demo-live.sh"), ["stop", beacond, out])
            try? FileManager.default.removeItem(atPath: out)
        }
        let started = try BeacondProcess.run(Self.script("demo-live.sh"), ["start", beacond, out])
        #expect(started.status == 0, "\(started.stderr)")
        let socket = out + "/beacond.sock"
        for command in [
            "kiosk --socket \(socket)", "kiosk --web 127.0.0.1:8088 --socket \(socket)", "watch --socket \(socket)",
            "status --socket \(socket)",
        ] {
            #expect(started.lines.contains { $0.hasPrefix("  \(beacond) \(command)") }, "\(started.stdout)")
        }
        #expect(started.stdout.contains("Stop it with: make demo-stop"))
        let again = try BeacondProcess.run(Self.script("demo-live.sh"), ["start", beacond, out])
        #expect(again.stdout.hasPrefix("A demo daemon runs (pid"), "a second start reuses the running daemon")

        // Race control's file says red flag: the kiosk follows (polled every second), from race control
        // (the example's beacons raise SC, RED FLAG and EVACUATE later in each pass, from a beacon).
        let document = out + "/race-control.json"
        let text = try String(contentsOfFile: document, encoding: .utf8)
        try text.replacingOccurrences(of: "\"NORMAL\"", with: "\"RED_FLAG\"")
            .write(toFile: document, atomically: true, encoding: .utf8)
        var shown = ""
        let followed = blockingWaitUntil(within: 25) {
            let frame = try? BeacondProcess.run(
                BeacondProcess.executable, ["kiosk", "--once", "--socket", socket],
                environment: ["COLUMNS": "60", "LINES": "12"])
            shown = frame?.stdout ?? ""
            let status = frame?.lines.last?.trimmingCharacters(in: .whitespaces)
            return status == "RED FLAG" && shown.contains("Source: race control")
        }
        #expect(followed, "the kiosk shows \(shown)")

        let pid = try String(contentsOfFile: out + "/demo-live.pid", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let stopped = try BeacondProcess.run(Self.script("demo-live.sh"), ["stop", beacond, out])
        #expect(stopped.stdout == "stopped the demo daemon (pid \(pid))\n")
        #expect(kill(Int32(pid) ?? 0, 0) != 0)
        #expect(!FileManager.default.fileExists(atPath: out + "/demo-live.pid"))
        let none = try BeacondProcess.run(Self.script("demo-live.sh"), ["stop", beacond, out])
        #expect(none.stdout == "no demo daemon is running\n")
    }
}
