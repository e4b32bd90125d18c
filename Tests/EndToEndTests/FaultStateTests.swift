import BeacondTestSupport
import Foundation
import Testing

/// Issue 14, fault injection: the process and its state directory. SIGKILL at random moments
/// while the remote state is saved on every poll, then a restart with race control down; and a
/// state directory that is read-only or full (a bind mount or a tiny tmpfs inside `unshare -m`).
@Suite(
    .serialized,
    .enabled(
        if: RemoteTestTools.hasPython, "/usr/bin/python3 is missing (the venue API stand-in): `make test` installs it")
)
struct FaultStateTests {
    static var example: String { ReplayCommandTests.example }

    /// Whether this process may make mount namespaces (root, or CAP_SYS_ADMIN); printed when not.
    static let canUnshare: Bool = {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare"),
            let result = try? BeacondProcess.run(URL(fileURLWithPath: "/usr/bin/unshare"), ["-m", "/bin/true"])
        else { return false }
        if result.status != 0 { print("FaultStateTests: unshare -m is not allowed here: \(result.stderr)") }
        return result.status == 0
    }()

    static func body(_ mode: String, _ message: String) -> String {
        #"{"id":"1","global_mode":"\#(mode)","message":"\#(message)"}"#
    }

    static func remote(_ status: [String: Any]?) -> [String: Any]? {
        (status?["state"] as? [String: Any])?["remote"] as? [String: Any]
    }

    /// Four rounds: race control changes its message every 20 ms while the daemon polls every
    /// 100 ms (and saves each fetch); SIGKILL at a seeded random moment; race control goes down
    /// (500); the restarted daemon removes the stale socket, restores the last saved state (never a
    /// torn file), marked restored and not fresh, and shows it to a client; then race control comes
    /// back and the next round kills that daemon.
    @Test func sigkillThenRestartComesBackWithThePersistedRemoteStateMarkedStale() throws {
        let api = try RemoteAPIServer(body: Self.body("YELLOW", "round 0 message 0"))
        let directory = try TemporaryDirectory(prefix: "bfk", short: true)
        let arguments = [
            "--backend", "replay", "--replay", Self.example, "--speed", "max", "--remote-url", api.url,
            "--poll-interval", "0.1",
        ]
        func start() throws -> DaemonProcess {
            try DaemonProcess(arguments, socket: directory.path + "/s", stateDirectory: directory.path + "/state")
        }
        var random = SplitMix64(seed: 1414)
        var daemon = try start()
        var figures: [String] = []
        for round in 0..<4 {
            #expect(
                blockingWaitUntil(within: 10) { Self.remote(daemon.quickStatus())?["fresh"] as? Bool == true },
                "round \(round): \(daemon.logText)")
            var served: [String] = []
            let flips = Int.random(in: 5...25, using: &random)
            for flip in 0..<flips {
                let message = "round \(round) message \(flip)"
                try api.serve(Self.body(flip % 2 == 0 ? "YELLOW" : "SC", message))
                served.append(message)
                usleep(20_000)
            }
            kill(daemon.pid, SIGKILL)
            #expect(daemon.waitForExit())
            #expect(daemon.process.terminationReason == .uncaughtSignal)
            // SIGKILL leaves the socket file; the restart must take it as stale.
            #expect(FileManager.default.fileExists(atPath: daemon.socket))
            try api.serve("down", status: 500)
            daemon = try start()
            #expect(daemon.waitForLog("listening on"), "round \(round): \(daemon.logText)")
            #expect(daemon.count("removed stale socket") == 1)
            #expect(daemon.count("ignoring the saved remote state") == 0, "round \(round): \(daemon.logText)")
            let client = try WatchingClient(path: daemon.socket)
            let status = daemon.quickStatus()
            let remote = try #require(Self.remote(status), "round \(round): no remote state after the restart")
            #expect(remote["restored"] as? Bool == true)
            #expect(remote["fresh"] as? Bool == false)
            let message = remote["message"] as? String ?? ""
            #expect(served.contains(message) || message.hasPrefix("round \(round - 1) "), "round \(round): \(message)")
            #expect(["yellow_flag", "safety_car"].contains(remote["reported_mode"] as? String ?? ""))
            #expect(client.waitForLatest(of: daemon), "round \(round): \(client.receivedStates.suffix(3))")
            let leftovers = (try? FileManager.default.contentsOfDirectory(atPath: directory.path + "/state")) ?? []
            figures.append(
                "round \(round): \(flips) changes served, restored \"\(message)\", files \(leftovers.sorted())")
            try api.serve(Self.body("YELLOW", "round \(round + 1) message 0"))
        }
        print("fault process sigkill:\n" + figures.joined(separator: "\n"))
        #expect(daemon.stop() != nil)
        #expect(daemon.exitStatus == 0)
    }

    /// The state directory read-only (a read-only bind mount) or full (a 4 KiB tmpfs filled up):
    /// race control's changes are all published, the save failure is logged once, and the daemon
    /// keeps serving.
    @Test(
        .enabled(if: canUnshare, "unshare -m is not allowed here (needs root or CAP_SYS_ADMIN)"),
        arguments: ["read-only", "full"])
    func aReadOnlyOrFullStateDirectoryIsLoggedOnceAndServingGoesOn(_ kind: String) throws {
        let directory = try TemporaryDirectory(prefix: "bfd", short: true)
        let state = directory.path + "/state"
        #expect(mkdir(state, 0o755) == 0)
        let script =
            kind == "read-only"
            ? "mount --bind '\(state)' '\(state)' && mount -o remount,bind,ro '\(state)' && exec \"$@\""
            : """
            mount -t tmpfs -o size=4k tmpfs '\(state)' && { dd if=/dev/zero of='\(state)/fill' bs=1k 2>/dev/null; \
            true; } && exec "$@"
            """
        let api = try RemoteAPIServer(body: Self.body("YELLOW", "change 0"))
        let daemon = try DaemonProcess(
            [
                "--backend", "replay", "--replay", Self.example, "--speed", "max", "--remote-url", api.url,
                "--poll-interval", "0.1",
            ], socket: directory.path + "/s", stateDirectory: state, launcherScript: script)
        #expect(daemon.waitForLog("listening on"), "\(daemon.logText)")
        let client = try WatchingClient(path: daemon.socket)
        let rssBefore = daemon.memory?.resident ?? 0
        for change in 1...10 {
            let mode = change % 2 == 0 ? "YELLOW" : "SC"
            try api.serve(Self.body(mode, "change \(change)"))
            let published = blockingWaitUntil(within: 5) {
                Self.remote(daemon.quickStatus())?["message"] as? String == "change \(change)"
            }
            #expect(published, "change \(change): \(daemon.logText)")
        }
        #expect(daemon.quickStatus() != nil, "status did not answer within 100 ms")
        #expect(client.waitForLatest(of: daemon))
        #expect(client.seqOnlyIncreased && !client.hungUp)
        let lines = daemon.logLines.filter {
            $0.contains("remote state will not be saved") || $0.contains("cannot save")
        }
        let rssAfter = daemon.memory?.resident ?? 0
        print(
            """
            fault process state dir \(kind): \(api.requests().count) polls, \(client.receivedStates.count) states \
            to the client, RSS \(rssBefore) → \(rssAfter) KiB, \(lines.count) log line(s): \(lines)
            """)
        // Once per kind of line: the save failure once (however many saves fail), and for a
        // read-only directory the start-up check's warning before it.
        let reason = kind == "read-only" ? "Read-only file system" : "No space left on device"
        #expect(lines.filter { $0.contains("cannot save the remote state") }.count == 1, "\(daemon.logText)")
        #expect(lines.filter { $0.contains("remote state will not be saved") }.count == (kind == "read-only" ? 1 : 0))
        #expect(lines.allSatisfy { $0.contains(reason) })
        #expect(daemon.stop() != nil)
        #expect(daemon.exitStatus == 0)
        #expect(!FileManager.default.fileExists(atPath: daemon.socket))
    }
}
