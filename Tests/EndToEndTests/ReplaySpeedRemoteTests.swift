import BeacondTestSupport
import Foundation
import Testing

/// Issue 25, class 8: in a replay at ×20 (the engine on capture time), race control polled live is
/// judged on the real clock, so docs/commands.md's example is steady instead of flapping on every poll.
@Suite struct ReplaySpeedRemoteTests {
    @Test func aLiveRemoteDuringAReplayAtTwentyTimesIsSteady() throws {
        let scratch = try TemporaryDirectory(prefix: "beacond-speed20")
        let remote = try scratch.write("state.json", #"{"global_mode":"SC","message":"safety car"}"#)
        let daemon = try DaemonProcess([
            "--backend", "replay", "--replay", ReplayCommandTests.example, "--speed", "20",
            "--remote-url", "file://" + remote,
        ])
        defer { _ = daemon.stop() }
        #expect(daemon.waitForLog("listening"))
        let kiosk = try LineClient(path: daemon.socket)
        var states: [[String: Any]] = []
        // 12 s real is 240 s of the capture and two or three polls 5 s apart.
        let end = Date().addingTimeInterval(12)
        while Date() < end {
            if let state = kiosk.next(type: "state") { states.append(state) }
        }
        let first = try #require(
            states.firstIndex { ($0["remote"] as? [String: Any])?["fresh"] as? Bool == true }, "never fresh: \(states)")
        let afterFetch = states[first...]
        let summary = afterFetch.map { "\($0["mode"] ?? "?")/\($0["source"] ?? "?")" }
        // Fresh from the first fetch on: polls 5 s apart never let it go stale (15 s real).
        let stale = afterFetch.filter { ($0["remote"] as? [String: Any])?["fresh"] as? Bool != true }
        #expect(stale.isEmpty, "the remote went stale between polls: \(summary)")
        // The safety policy: a fresh safety car is never lowered by a beacon's normal; only a beacon's
        // red flag or evacuation may stand above it.
        for state in afterFetch {
            let mode = state["mode"] as? String ?? "?"
            let source = state["source"] as? String ?? "?"
            #expect(
                (source == "remote" && mode == "safety_car") || ["red_flag", "evacuation"].contains(mode),
                "published \(mode) from \(source) over a fresh safety car: \(summary)")
        }
        print("replay ×20 with a live remote: \(states.count) states in 12 s: \(summary)")
    }
}
