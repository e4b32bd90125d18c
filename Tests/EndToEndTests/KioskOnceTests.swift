import BeacondTestSupport
import Foundation
import Testing

/// `beacond kiosk --once` (issue 26): one frame as plain text, which `make demo` prints.
@Suite struct KioskOnceTests {
    @Test func oneFrameOfTheStateNowAtTheSizeTheEnvironmentGives() throws {
        let name = "kiosk-once-\(UUID().uuidString.prefix(8).lowercased())"
        let daemon = try DaemonProcess(
            ["--backend", "replay", "--replay", KioskTmuxTests.evacuation, "--speed", "1"], name: name)
        #expect(daemon.waitForLog("listening on"))
        var frame = BeacondProcess.Result(status: -1, stdout: "", stderr: "")
        // The daemon publishes the evacuation once the replay's first record is read.
        _ = blockingWaitUntil(within: 10) {
            frame =
                (try? BeacondProcess.run(
                    BeacondProcess.executable, ["kiosk", "--once", "--socket", daemon.socket],
                    environment: ["COLUMNS": "60", "LINES": "14"])) ?? frame
            return frame.lines.last?.trimmingCharacters(in: .whitespaces) == "EVACUATE"
        }
        #expect(frame.status == 0, "\(frame.stderr)")
        #expect(frame.lines.last?.trimmingCharacters(in: .whitespaces) == "EVACUATE", "\(frame.stdout)")
        let rows = frame.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        #expect(rows.count == 14, "\(frame.stdout)")
        #expect(rows.allSatisfy { $0.count <= 60 && !$0.hasSuffix(" ") })
        #expect(!frame.stdout.contains("\u{1B}"))
        #expect(rows.filter { $0.contains("█") }.count == 7, "\(frame.stdout)")
        #expect(rows.contains { $0.contains("Zone 1") })
        #expect(daemon.stop() != nil)

        // No daemon: the NO SIGNAL frame, exit 1; a size out of range falls back to 80 × 24.
        let none = try BeacondProcess.run(
            BeacondProcess.executable, ["kiosk", "--once", "--socket", daemon.socket],
            environment: ["COLUMNS": "0", "LINES": "14"])
        #expect(none.status == 1)
        #expect(none.lines.last?.trimmingCharacters(in: .whitespaces) == "NO SIGNAL — daemon unreachable")
        #expect(none.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast().count == 24)
        #expect(none.stdout.contains("the daemon is not running"))
    }
}
