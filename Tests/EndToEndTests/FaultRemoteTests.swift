import BeacondCore
import BeacondTestSupport
import Foundation
import Testing

/// Fault injection, the remote (issue 14, docs/robustness.md): a venue API that refuses, hangs,
/// errs, redirects, sends broken, huge, deep or odd bodies, flaps, or presents a bad certificate.
/// Through it all the real `beacond run` keeps serving, the remote state follows the staleness rule,
/// and the remote's log lines stay at one per health transition per minute.
@Suite(
    .serialized,
    .enabled(
        if: RemoteTestTools.hasPython && RemoteTestTools.hasOpenSSL,
        "/usr/bin/python3 or /usr/bin/openssl is missing: `make test` installs them"))
struct FaultRemoteTests {
    static let staleAfter = 1.5
    static let remoteFlags = ["--poll-interval", "0.1", "--timeout", "0.5", "--stale-after", "1.5"]
    static let good = #"{"global_mode":"YELLOW","message":"MESSAGE"}"#

    static func startDaemon(_ flags: [String]) throws -> DaemonProcess {
        try DaemonProcess(
            ["--backend", "replay", "--replay", FaultProbe.emptyCapture, "--speed", "1"] + remoteFlags + flags)
    }

    /// The remote block of the published state and the poller's counters, with the answer time.
    struct Sample {
        var remote: [String: Any]
        var poller: [String: Any]
        var state: [String: Any]
        var ms: Double

        init?(_ socket: String) {
            guard let (status, ms) = FaultProbe.statusRoundTrip(socket),
                let state = status["state"] as? [String: Any],
                let remote = state["remote"] as? [String: Any],
                let poller = status["remote_poller"] as? [String: Any]
            else { return nil }
            (self.remote, self.poller, self.state, self.ms) = (remote, poller, state, ms)
        }

        var fresh: Bool { remote["fresh"] as? Bool == true }
        var age: Double? { remote["age_s"] as? Double }
        var message: String? { remote["message"] as? String }
        var errorKind: String? { poller["last_error_kind"] as? String }
    }

    /// Serves a good yellow state carrying `message` until the daemon shows it fresh.
    static func recover(_ server: RemoteAPIServer, _ daemon: DaemonProcess, message: String) throws -> Bool {
        try server.serve(good.replacingOccurrences(of: "MESSAGE", with: message))
        return blockingWaitUntil(within: 10, intervalMicros: 50_000) {
            guard let sample = Sample(daemon.socket) else { return false }
            return sample.fresh && sample.message == message && sample.state["mode"] as? String == "yellow_flag"
        }
    }

    /// Applies `fault` and watches the daemon until its remote state has gone stale: every answer
    /// within 100 ms; fresh (and yellow) exactly while `age_s < stale_after`, then stale with no remote
    /// mode and not yellow; the failure counted under `kind`. Returns the slowest answer, ms.
    static func expectStaleness(
        _ daemon: DaemonProcess, kind: String, name: String, comment: Comment? = nil
    ) -> Double {
        var slowest = 0.0
        var sawKind = false
        var samples = 0
        var slow = 0
        let done = blockingWaitUntil(within: 10, intervalMicros: 100_000) {
            guard let sample = Sample(daemon.socket) else {
                Issue.record("\(name): no status answer")
                return false
            }
            slowest = max(slowest, sample.ms)
            samples += 1
            if sample.ms >= 100 { slow += 1 }
            sawKind = sawKind || sample.errorKind == kind
            guard let age = sample.age else { return false }
            // The age and freshness are read at one instant by the daemon: the rule holds exactly.
            #expect(sample.fresh == (age < staleAfter), "\(name): fresh=\(sample.fresh) at age \(age)")
            if sample.fresh {
                #expect(sample.state["mode"] as? String == "yellow_flag", "\(name): fresh but not yellow")
            } else {
                #expect(sample.remote["mode"] is NSNull, "\(name): stale but the remote mode is not null")
                #expect(sample.state["mode"] as? String != "yellow_flag", "\(name): stale but still yellow")
                #expect(sample.remote["reported_mode"] as? String == "yellow_flag", "\(name): reported mode lost")
            }
            return !sample.fresh && age > staleAfter + 0.2 && sawKind
        }
        #expect(done, "\(name): never went stale with last_error_kind \(kind): \(daemon.logText.suffix(3000))")
        // On this shared machine a sample can be descheduled: a stalled daemon would be slow in most.
        #expect(slow * 10 <= samples, "\(name): \(slow) of \(samples) status answers over 100 ms")
        print("fault \(name): \(samples) status samples, slowest \(slowest) ms, \(slow) over 100 ms")
        return slowest
    }

    /// Every log line: no raw ESC or other control byte, none longer than the logger's backstop allows.
    static func expectCleanLog(_ text: String) {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let raw = lines.filter { $0.utf8.contains { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F } }
        #expect(raw.isEmpty, "log lines with raw control bytes: \(raw.prefix(2))")
        let longest = lines.map(\.utf8.count).max() ?? 0
        #expect(longest <= 4096, "a log line of \(longest) bytes")
    }

    /// The daemon's log is clean (`expectCleanLog`) and it stops.
    static func expectCleanStop(_ daemon: DaemonProcess, sourceLocation: SourceLocation = #_sourceLocation) {
        expectCleanLog(daemon.logText)
        #expect(daemon.stop() != nil, sourceLocation: sourceLocation)
    }

    /// A race-control server, a daemon polling it, and a client watching the daemon's socket.
    static func startWatched() throws -> (server: RemoteAPIServer, daemon: DaemonProcess, watcher: WatchingClient) {
        let server = try RemoteAPIServer()
        let daemon = try startDaemon(["--remote-url", server.url])
        return (server, daemon, try WatchingClient(path: daemon.socket, connectWithin: 10))
    }

    /// The remote's own health lines: failing, failing with another kind, recovered.
    static func healthLines(_ daemon: DaemonProcess) -> [Substring] {
        FaultProbe.lines(daemon.logText, containing: "remote state fetch ")
            + FaultProbe.lines(daemon.logText, containing: "remote.fetch messages")
    }

    @Test func misbehavingAPIKeepsTheStalenessRuleAndAQuietLog() throws {
        let (server, daemon, watcher) = try Self.startWatched()
        let elsewhere = "http://127.0.0.1:\(RemoteTestTools.closedPort())/api/state"
        let faults: [(name: String, control: [String: Any], kind: String)] = [
            ("never answers", ["hang": 30], "timeout"),
            ("500", ["status": 500, "body": "oops"], "http_status"),
            ("404", ["status": 404, "body": "no such state"], "http_status"),
            ("301 elsewhere", ["status": 301, "headers": ["Location": elsewhere], "body": ""], "http_status"),
            ("truncated JSON", ["body": #"{"global_mode":"RED","mess"#], "not_json"),
            ("body cut short", ["body": #"{"global_mode":"RED"}"#, "content_length": 400], "transport"),
            ("100 MB streamed", ["stream_bytes": 100_000_000], "too_large"),
            ("100 MB declared", ["stream_bytes": 100_000_000, "declare": true], "too_large"),
            ("invalid UTF-8", ["body_hex": "7b22676c6f62616c5f6d6f6465223a22c328ff227d"], "not_json"),
            // Under the 64 KiB cap, so the parser meets the depth: 30,000 levels against its 32.
            (
                "nested 30,000 deep",
                ["body": String(repeating: "[", count: 30_000) + String(repeating: "]", count: 30_000)],
                "invalid_document"
            ),
            ("array of numbers", ["body": "[1,2,3]"], "invalid_document"),
            ("unknown mode", ["body": #"{"global_mode":"PURPLE","mode":"EMERGENCY"}"#], "unknown_mode"),
            ("mode key in two cases", ["body": #"{"global_mode":"RED","GLOBAL_MODE":"GREEN"}"#], "invalid_document"),
        ]
        for (index, fault) in faults.enumerated() {
            #expect(try Self.recover(server, daemon, message: "ok \(index)"), "\(fault.name): no recovery")
            try server.respond(fault.control)
            _ = Self.expectStaleness(daemon, kind: fault.kind, name: fault.name)
        }
        // The 100 MB bodies were refused by size: the server got out at most a few socket buffers.
        let streamed = server.streamedBytes
        #expect(streamed.count >= 2 && streamed.allSatisfy { $0 < 8_000_000 }, "streamed: \(streamed)")
        // An array whose first element is an object is a state (docs/fusion.md).
        try server.serve(#"[{"global_mode":"RED","message":"from an array"}]"#)
        #expect(watcher.waitForMessage("from an array"))
        #expect(watcher.lastState?["mode"] as? String == "red_flag")

        // Refused: the server is gone.
        #expect(try Self.recover(server, daemon, message: "before refusal"))
        server.stop()
        _ = Self.expectStaleness(daemon, kind: "connection_refused", name: "refused")

        // 2 transitions per fault, at most one line each; the repeated ones (three http_status
        // starts and recoveries within the minute) are held back, not written.
        let lines = Self.healthLines(daemon)
        let transitions = 2 * (faults.count + 1)
        #expect(lines.count <= transitions, "\(lines.count) remote lines for \(transitions) transitions")
        print("remote faults: \(lines.count) remote lines for \(transitions) transitions; streamed \(streamed)")
        #expect(Self.distinctTransitions(lines).allSatisfy { $0.value == 1 }, "\(Self.distinctTransitions(lines))")
        #expect(watcher.seqOnlyIncreased && !watcher.hungUp)
        Self.expectCleanStop(daemon)
    }

    @Test func flappingRemoteLogsEachTransitionOnceAndClientsEndOnTheLatestState() throws {
        let (server, daemon, watcher) = try Self.startWatched()
        #expect(try Self.recover(server, daemon, message: "steady"))
        // Healthy and failing by turns every 100 ms.
        let good = Self.good.replacingOccurrences(of: "MESSAGE", with: "steady")
        try server.respond(["flip": [["body": good], ["status": 500, "body": "down"]], "period": 0.1])
        let polled = server.requests().count
        // At least 15 polls, as the server counts them.
        #expect(blockingWaitUntil(within: 10, intervalMicros: 50_000) { server.requests().count - polled >= 15 })
        let flips = server.requests().count - polled
        let lines = Self.healthLines(daemon)
        #expect(lines.count <= 2, "\(lines.count) remote lines over \(flips) polls: \(lines)")
        #expect(flips >= 10)
        // Race control's state flips every 100 ms: the client follows, seq only increasing, and ends
        // on the last state.
        try server.respond([
            "flip": [["body": #"{"global_mode":"GREEN","message":"green"}"#], ["body": Self.good]], "period": 0.1,
        ])
        let flipping = server.requests().count
        #expect(blockingWaitUntil(within: 10, intervalMicros: 50_000) { server.requests().count - flipping >= 10 })
        try server.serve(#"{"global_mode":"SC","message":"final"}"#)
        #expect(watcher.waitForMessage("final"))
        #expect(watcher.lastState?["mode"] as? String == "safety_car")
        #expect(watcher.seqOnlyIncreased && !watcher.hungUp, "seqs \(watcher.receivedStates.map(\.seq))")
        let (status, ms) = try FaultProbe.statusCommand(daemon.socket)
        #expect(status.status == 0 && status.stdout.contains("final"))
        let states = watcher.receivedStates.count
        print("flap: \(flips) polls, \(lines.count) remote lines, \(states) states, status \(ms) ms")
        Self.expectCleanStop(daemon)
    }

    @Test func raceControlsMessageReachesNoLogOrTerminalRaw() throws {
        let (server, daemon, watcher) = try Self.startWatched()
        let hostile = [
            "\u{1B}[2J\u{1B}[31mRED\u{1B}]0;owned\u{07}",
            "line one\nINJECTED info beacond: state seq=999 mode=normal\r\n",
            #"quote" mode=normal source=beacon zone=9 x=""#,
            "\u{202E}desrever\u{2028}sep\u{85}nel",
            String(repeating: "\u{1B}", count: 10_000),
        ]
        for (index, message) in hostile.enumerated() {
            let body = try JSONSerialization.data(withJSONObject: ["global_mode": "YELLOW", "message": message])
            try server.serve(String(decoding: body, as: UTF8.self))
            let marker = "ok \(index)"
            #expect(blockingWaitUntil(within: 5) { (watcher.lastMessage ?? "").hasPrefix(String(message.prefix(4))) })
            let (status, _) = try FaultProbe.statusCommand(daemon.socket)
            #expect(status.status == 0)
            let bytes = Array(status.stdout.utf8)
            #expect(!bytes.contains(0x1B) && !bytes.contains(0x0D), "status printed a raw control byte")
            #expect(!status.stdout.split(separator: "\n").contains { $0.hasPrefix("INJECTED") })
            #expect(status.stdout.split(separator: "\n").allSatisfy { $0.utf8.count <= 8192 })
            #expect(try Self.recover(server, daemon, message: marker))
        }
        // 1 MB of message: over the 64 KiB body cap, refused by size; the last good state stays.
        let huge = #"{"global_mode":"RED","message":""# + String(repeating: "\u{1B}", count: 1 << 20) + #""}"#
        try server.serve(huge)
        _ = Self.expectStaleness(daemon, kind: "too_large", name: "1 MB message")
        let log = daemon.logText
        Self.expectCleanLog(log)
        #expect(!log.split(separator: "\n").contains { $0.hasPrefix("INJECTED") })
        // The quoted message cannot forge fields: the audit lines name one mode each.
        let audit = FaultProbe.lines(log, containing: " state seq=")
        #expect(!audit.isEmpty)
        #expect(
            audit.allSatisfy { FaultProbe.logfmtFields($0).filter { $0.hasPrefix("mode=") }.count == 1 },
            "\(audit.filter { $0.contains("quote") })")
        #expect(daemon.stop() != nil)
    }

    @Test func wrongAndExpiredCertificatesAreRefused() throws {
        let directory = try RemoteTestTools.temporaryDirectory()
        let venue = try RemoteTestTools.selfSignedCertificate(in: directory, name: "venue")
        let other = try RemoteTestTools.selfSignedCertificate(in: directory, name: "other")
        let expired = try RemoteTestTools.expiredCertificate(in: directory, name: "expired")
        // Trusted: the venue's certificate and the expired one (so only its dates can fail it).
        let trusted = directory + "/trusted.pem"
        let pems = try [venue.cert, expired.cert].map { try String(contentsOfFile: $0, encoding: .utf8) }
        try pems.joined().write(toFile: trusted, atomically: true, encoding: .utf8)
        let good = try RemoteAPIServer(body: "{}", tls: venue)
        let wrong = try RemoteAPIServer(body: #"{"global_mode":"RED"}"#, tls: other)
        let stale = try RemoteAPIServer(body: #"{"global_mode":"RED"}"#, tls: expired)
        let config = directory + "/beacond.yaml"
        func point(at server: RemoteAPIServer) throws {
            let yaml = "remote:\n  url: \(server.url)\n  ca_file: \(trusted)\n"
            try yaml.write(toFile: config, atomically: true, encoding: .utf8)
        }
        try point(at: good)
        let daemon = try Self.startDaemon(["--config", config])
        for (name, server) in [("wrong certificate", wrong), ("expired certificate", stale)] {
            try point(at: good)
            kill(daemon.process.processIdentifier, SIGHUP)
            #expect(try Self.recover(good, daemon, message: "before \(name)"))
            try point(at: server)
            kill(daemon.process.processIdentifier, SIGHUP)
            _ = Self.expectStaleness(daemon, kind: "tls", name: name)
            #expect(server.requests().count == 0, "\(name): a request went through")
        }
        Self.expectCleanStop(daemon)
    }

    /// The health lines per transition ("healthy>http_status", "http_status>healthy" …).
    static func distinctTransitions(_ lines: [Substring]) -> [String: Int] {
        var counts: [String: Int] = [:]
        for line in lines {
            let fields = line.split(separator: " ")
            let kind = fields.first { $0.hasPrefix("kind=") }?.dropFirst(5)
            let previous = fields.first { $0.hasPrefix("previous_kind=") }?.dropFirst(14)
            let last = fields.first { $0.hasPrefix("last_error_kind=") }?.dropFirst(16)
            let key: String
            if line.contains("recovered") {
                key = "\(last ?? "?")>healthy"
            } else {
                key = "\(previous ?? "healthy")>\(kind ?? "?")"
            }
            counts[key, default: 0] += 1
        }
        return counts
    }
}
