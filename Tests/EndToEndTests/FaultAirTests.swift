import BLEPayload
import BeacondTestSupport
import Foundation
import Testing

/// Issue 14, fault injection: the air. Spoofed GeoRacing frames, written as btsnoop captures with
/// the project's encoders, replayed through `beacond run --backend replay`: memory stays bounded,
/// the daemon keeps serving (each spoofing mitigation is in `FaultAirMitigationTests`).
@Suite(.serialized) struct FaultAirTests {
    typealias Frame = FaultCaptures.Frame

    // MARK: Memory and serving under a flood

    /// 131,072 spoofed frames: every zone (0–65535) once with every sequence once (a seeded
    /// permutation), random TTLs, modes (two of them unknown) and RSSIs, from 20,000 addresses;
    /// then every sequence again on 1024 keys (16 zones × 64 addresses), so keys meet their own
    /// older, newer and contested sequences. Replayed at 30× (about 2.2 s, 60,000 frames a
    /// second) to a client: status answers throughout (within a second, best of three), the
    /// client's seqs only increase and it ends with the latest state, the table stays at its cap,
    /// memory stays flat (peak within 40 MiB of the idle daemon's), and the log stays bounded.
    @Test func aFloodOfSpoofedFramesKeepsMemoryBoundedAndTheDaemonServing() throws {
        let flood = FaultCaptures.spoofFlood(seed: 0xA1_2014, interval: 500)
        var random = SplitMix64(seed: 0xA1_2015)
        var sequences = (0...UInt16.max).map { $0 }
        sequences.shuffle(using: &random)
        let keyed = sequences.enumerated().map { index, sequence in
            Frame(
                micros: 32_768_000 + Int64(index) * 500, address: 0x5E_00_00_00_10_00 + UInt64(index % 64),
                signal: .circuit(
                    zone: UInt16(index / 64 % 16), mode: GeoRacingMode(rawValue: UInt8(index % 4)), sequence: sequence,
                    ttl: UInt8.random(in: 0...255, using: &random)),
                rssi: -70)
        }
        let directory = try TemporaryDirectory(prefix: "bff", short: true)
        let capture = directory.path + "/flood.btsnoop"
        let bytes = FaultCaptures.capture(flood + keyed)
        try Data(bytes).write(to: URL(fileURLWithPath: capture))
        let daemon = try DaemonProcess(
            ["--backend", "replay", "--replay", capture, "--speed", "30"], socket: directory.path + "/s",
            stateDirectory: directory.path)
        #expect(daemon.waitForLog("listening on"))
        let idle = daemon.memory
        let client = try WatchingClient(path: daemon.socket)
        let started = Date()
        var statusAnswers = 0
        var statusFailures = 0
        var slowestBest = 0.0
        while !daemon.logText.contains("holding the final state") && Date().timeIntervalSince(started) < 60 {
            if let timing = FaultProbe.statusTiming(daemon.socket) {
                statusAnswers += 1
                slowestBest = max(slowestBest, timing.best)
            } else {
                statusFailures += 1
            }
            usleep(200_000)
        }
        let seconds = Date().timeIntervalSince(started)
        let afterwards = FaultProbe.statusTiming(daemon.socket)
        #expect(daemon.logText.contains("holding the final state"), "\(daemon.logText.suffix(2000))")
        // At 30× the engine clock runs on after the capture ends and expiries keep publishing, so the
        // client is compared with what status says on each try. With the table at its cap a reply can
        // take over 100 ms (its bound here is below: a second), so not `quickStatus`.
        let status = try #require(
            client.statusAgreeingWithLatest(socket: daemon.socket), "\(client.receivedStates.suffix(3))")
        let state = try #require(DaemonProcess.state(of: status))
        #expect(client.seqOnlyIncreased)
        #expect(!client.hungUp)
        let counters = status["counters"] as? [String: Any] ?? [:]
        let memory = daemon.memory
        let lines = daemon.logLines.count
        let spoofing = daemon.count("possible spoofing")
        print(
            """
            fault air flood: \(flood.count + keyed.count) frames (\(bytes.count) bytes) in \
            \(String(format: "%.2f", seconds)) s; status answered \(statusAnswers)× (slowest best of 3: \
            \(String(format: "%.1f", slowestBest)) ms; after the replay \
            \(String(format: "%.1f", afterwards?.best ?? -1)) ms), failed \(statusFailures)×; \
            RSS idle \(idle?.resident ?? 0) KiB → end \(memory?.resident ?? 0) KiB (peak \(memory?.peak ?? 0) KiB); \
            \(client.receivedStates.count) states to the client, final seq \(state.seq); \(lines) log lines, \
            \(spoofing) spoofing warnings; counters \(counters)
            """)
        #expect(statusFailures == 0)
        // Not the 100 ms of the other fault scenarios: with the table at its cap a status reply takes
        // 200–330 ms in a debug build once the replay is over, and 300–600 ms during it (an open
        // finding, docs/robustness.md "the air"). What is asserted: every request is answered, and
        // no stall (a second, best of three).
        let settled = try #require(afterwards, "status did not answer after the replay")
        #expect(slowestBest < 1_000, "status took \(slowestBest) ms at best, \(settled.best) ms after")
        #expect(counters["signals"] as? Int == flood.count + keyed.count)
        #expect((counters["overrides"] as? Int ?? .max) <= 4096)
        #expect((counters["evicted"] as? Int ?? 0) > 0)
        #expect((counters["contests"] as? Int ?? 0) > 0)
        #expect((counters["filtered_unknown_mode"] as? Int ?? 0) > 0)
        let growth = (memory?.peak ?? .max) - (idle?.resident ?? 0)
        #expect(growth < 40 * 1024, "peak RSS grew by \(growth) KiB")
        // Bounded log: the audit is summarised past 20 changes a second, spoofing warnings are per key
        // per minute of capture time; a few hundred lines, not one per frame.
        #expect(lines < 2_000, "\(lines) log lines")
        #expect(daemon.stop() != nil)
        #expect(daemon.exitStatus == 0)
    }
}
