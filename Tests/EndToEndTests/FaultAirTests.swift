import BLEPayload
import BeacondTestSupport
import Foundation
import Testing

/// Issue 14, fault injection: the air. Spoofed GeoRacing frames, written as btsnoop captures with
/// the project's encoders, replayed through `beacond run --backend replay`: memory stays bounded,
/// the daemon keeps serving, and each spoofing mitigation docs/security.md claims holds (the
/// mitigations that need race control are in `FaultAirPolicyTests`).
@Suite(.serialized) struct FaultAirTests {
    typealias Frame = FaultCaptures.Frame

    /// What a replay at maximum speed ends with: the final status, and the log.
    struct Outcome {
        var status: [String: Any]
        var log: String

        var state: [String: Any] { status["state"] as? [String: Any] ?? [:] }
        var mode: String? { state["mode"] as? String }
        var zone: Int? { state["zone"] as? Int }
        var beacon: [String: Any]? { state["beacon"] as? [String: Any] }
        func counter(_ name: String) -> Int { (status["counters"] as? [String: Any])?[name] as? Int ?? -1 }
        func lines(_ text: String) -> Int { log.split(separator: "\n").filter { $0.contains(text) }.count }
    }

    /// Replays `frames` at maximum speed with `config` (YAML) and `flags`, then reads the status.
    static func replay(_ frames: [Frame], config: String? = nil, flags: [String] = [], name: String) throws -> Outcome {
        let directory = try TemporaryDirectory(prefix: "bfa", short: true)
        let capture = directory.path + "/air.btsnoop"
        try Data(FaultCaptures.capture(frames)).write(to: URL(fileURLWithPath: capture))
        var arguments = ["--backend", "replay", "--replay", capture, "--speed", "max"] + flags
        if let config {
            try config.write(toFile: directory.path + "/beacond.yaml", atomically: true, encoding: .utf8)
            arguments += ["--config", directory.path + "/beacond.yaml"]
        }
        let daemon = try FaultDaemon(arguments, socket: directory.path + "/s", stateDirectory: directory.path)
        #expect(daemon.waitForLog("holding the final state", timeout: 30), "\(name): \(daemon.logText)")
        let status = daemon.quickStatus()
        #expect(status != nil, "\(name): status did not answer within 100 ms")
        #expect(daemon.stop() != nil)
        #expect(daemon.exitStatus == 0, "\(name): \(daemon.logText)")
        return Outcome(status: status ?? [:], log: daemon.logText)
    }

    /// `count` frames from `address`, `every` µs apart from `from`, sequences counting up from `sequence`.
    static func repeated(
        _ address: UInt64, zone: UInt16, mode: GeoRacingMode, sequence: UInt16, ttl: UInt8 = 10, rssi: Int8 = -60,
        from: Int64 = 0, every: Int64 = 250_000, count: Int, sameSequence: Bool = true
    ) -> [Frame] {
        (0..<count).map { index in
            let seq = sameSequence ? sequence : sequence &+ UInt16(truncatingIfNeeded: index)
            return Frame(
                micros: from + Int64(index) * every, address: address,
                signal: .circuit(zone: zone, mode: mode, sequence: seq, ttl: ttl), rssi: rssi)
        }
    }

    static func merged(_ lists: [Frame]...) -> [Frame] { lists.flatMap { $0 }.sorted { $0.micros < $1.micros } }

    static let real: UInt64 = 0xC0_FF_EE_00_00_03
    static let forger: UInt64 = 0x5E_00_00_00_00_66

    // MARK: Memory and serving under a flood

    /// 131,072 spoofed frames: every zone (0–65535) once with every sequence once (a seeded
    /// permutation), random TTLs, modes (two of them unknown) and RSSIs, from 20,000 addresses;
    /// then every sequence again on 1024 keys (16 zones × 64 addresses), so keys meet their own
    /// older, newer and contested sequences. Replayed at 30× (about 2.2 s, 60,000 frames a
    /// second) to a client: status answers within 100 ms throughout, the client's seqs only
    /// increase and it ends with the latest state, the table stays at its cap, memory stays flat
    /// (peak within 40 MiB of the idle daemon's), and the log stays bounded.
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
        let daemon = try FaultDaemon(
            ["--backend", "replay", "--replay", capture, "--speed", "30"], socket: directory.path + "/s",
            stateDirectory: directory.path)
        #expect(daemon.waitForLog("listening on"))
        let idle = daemon.memory
        let client = try WatchingClient(path: daemon.socket)
        let started = Date()
        var statusAnswers = 0
        var statusFailures = 0
        while !daemon.logText.contains("holding the final state") && Date().timeIntervalSince(started) < 60 {
            if daemon.quickStatus() != nil { statusAnswers += 1 } else { statusFailures += 1 }
            usleep(200_000)
        }
        let seconds = Date().timeIntervalSince(started)
        #expect(daemon.logText.contains("holding the final state"), "\(daemon.logText.suffix(2000))")
        let status = try #require(daemon.quickStatus(), "status did not answer within 100 ms")
        let state = try #require(FaultDaemon.state(of: status))
        #expect(client.waitForLatest(state), "\(client.receivedStates.suffix(3)) vs \(state)")
        #expect(client.seqOnlyIncreased)
        #expect(!client.hungUp)
        let counters = status["counters"] as? [String: Any] ?? [:]
        let memory = daemon.memory
        let lines = daemon.logLines.count
        let spoofing = daemon.count("possible spoofing")
        print(
            """
            fault air flood: \(flood.count + keyed.count) frames (\(bytes.count) bytes) in \
            \(String(format: "%.2f", seconds)) s; status answered \(statusAnswers)×, failed \(statusFailures)×; \
            RSS idle \(idle?.resident ?? 0) KiB → end \(memory?.resident ?? 0) KiB (peak \(memory?.peak ?? 0) KiB); \
            \(client.receivedStates.count) states to the client, final seq \(state.seq); \(lines) log lines, \
            \(spoofing) spoofing warnings; counters \(counters)
            """)
        #expect(statusFailures == 0)
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
