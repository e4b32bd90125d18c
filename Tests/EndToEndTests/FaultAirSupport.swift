import BLEPayload
import BeacondTestSupport
import Foundation

/// Captures for the air scenarios, written with the project's own encoders and btsnoop writer
/// (as `beacond example-capture` is), and what a replay of one through `beacond run` publishes.
enum FaultCaptures {
    /// 2026-05-16T12:00:00Z, as the example capture.
    static let start: Int64 = 1_778_932_800_000_000

    /// One frame to append: when (µs after `start`), from where, what.
    struct Frame {
        var micros: Int64
        var address: UInt64
        var signal: GeoRacingSignal
        var rssi: Int8 = -60
        /// A report with extra AD structures in front (a TX power level), for the distance gate.
        var txPower: Int8?
    }

    /// A btsnoop capture of `frames`, in order, one advertising report per HCI event.
    static func capture(_ frames: [Frame]) -> [UInt8] {
        var bytes = BTSnoopWriter.fileHeader()
        bytes.reserveCapacity(16 + frames.count * 72)
        for frame in frames {
            var data: [UInt8] = []
            if let txPower = frame.txPower { data += [0x02, 0x0A, UInt8(bitPattern: txPower)] }
            data += frame.signal.advertisingData()
            let report = OwnedAdvertisingReport(
                kind: .advNonconnInd, addressType: .randomDevice, address: BluetoothAddress(rawValue: frame.address),
                rssi: frame.rssi, data: data)
            guard let event = try? HCIEventEncoder.advertisingReport([report]) else { continue }
            BTSnoopWriter.appendRecord(to: &bytes, timestamp: start + frame.micros, packet: HCIEventEncoder.h4(event))
        }
        return bytes
    }

    /// The spoofing flood: 65,536 v1 frames, one for every zone (0–65535) and one for every
    /// sequence (a seeded permutation of 0–65535), with random TTLs (0–255), random modes (0–5: the
    /// four known and two unknown) and RSSIs, from `addresses` random addresses, `interval` µs apart.
    static func spoofFlood(seed: UInt64, addresses: Int = 20_000, interval: Int64 = 1_000) -> [Frame] {
        var random = SplitMix64(seed: seed)
        var sequences = (0...UInt16.max).map { $0 }
        sequences.shuffle(using: &random)
        let pool = (0..<addresses).map { _ in UInt64.random(in: 1...0xFFFF_FFFF_FFFF, using: &random) }
        return (0...UInt16.max).map { zone in
            let signal = GeoRacingSignal.circuit(
                zone: zone, mode: GeoRacingMode(rawValue: UInt8.random(in: 0...5, using: &random)),
                sequence: sequences[Int(zone)], ttl: UInt8.random(in: 0...255, using: &random))
            return Frame(
                micros: Int64(zone) * interval, address: pool.randomElement(using: &random) ?? 1, signal: signal,
                rssi: Int8.random(in: -89...(-30), using: &random))
        }
    }

    /// `count` frames from `address`, `every` µs apart from `from`; the same sequence, or counting up.
    static func repeated(
        _ address: UInt64, zone: UInt16, mode: GeoRacingMode, sequence: UInt16, ttl: UInt8 = 10, rssi: Int8 = -60,
        from: Int64 = 0, every: Int64 = 250_000, count: Int, countingUp: Bool = false
    ) -> [Frame] {
        (0..<count).map { index in
            let seq = countingUp ? sequence &+ UInt16(truncatingIfNeeded: index) : sequence
            return Frame(
                micros: from + Int64(index) * every, address: address,
                signal: .circuit(zone: zone, mode: mode, sequence: seq, ttl: ttl), rssi: rssi)
        }
    }

    static func merged(_ lists: [Frame]...) -> [Frame] { lists.flatMap { $0 }.sorted { $0.micros < $1.micros } }

    static let real: UInt64 = 0xC0_FF_EE_00_00_03
    static let forger: UInt64 = 0x5E_00_00_00_00_66
}

/// What a replay at maximum speed published. At maximum speed the daemon evaluates every pending
/// expiry when the capture ends (docs/replay: "holding the final state"), so its final state is
/// `unknown` whatever the capture held; the scenarios therefore judge the states it published on
/// the way (the audit log's `state seq=` lines) and the counters, which stay.
struct AirOutcome {
    /// One published state, from its audit line.
    struct Published: CustomStringConvertible {
        var mode: String
        var source: String
        var zone: Int?
        var beacon: String?
        var beaconSeq: Int?

        var description: String { "\(mode)/\(source)/\(zone.map(String.init) ?? "-")/\(beaconSeq ?? -1)" }
    }

    var status: [String: Any]
    var log: String

    /// The published states in order, consecutive repeats of (mode, source, zone, beacon) folded.
    var published: [Published] {
        var states: [Published] = []
        for line in FaultProbe.lines(log, containing: " state seq=") {
            var fields: [String: String] = [:]
            for field in FaultProbe.logfmtFields(line) {
                guard let equals = field.firstIndex(of: "=") else { continue }
                fields[String(field[..<equals])] = String(field[field.index(after: equals)...])
            }
            let state = Published(
                mode: fields["mode"] ?? "?", source: fields["source"] ?? "?", zone: fields["zone"].flatMap { Int($0) },
                beacon: fields["beacon"], beaconSeq: fields["beacon_seq"].flatMap { Int($0) })
            if let last = states.last, last.mode == state.mode, last.source == state.source,
                last.zone == state.zone, last.beacon == state.beacon
            {
                continue
            }
            states.append(state)
        }
        return states
    }

    /// The states the beacons published (race control has no URL in these scenarios).
    var fromBeacons: [Published] { published.filter { $0.source == "beacon" } }

    func saw(_ mode: String, zone: Int? = nil) -> Bool {
        fromBeacons.contains { $0.mode == mode && (zone == nil || $0.zone == zone) }
    }

    func counter(_ name: String) -> Int { (status["counters"] as? [String: Any])?[name] as? Int ?? -1 }
    func lines(_ text: String) -> Int { FaultProbe.lines(log, containing: text).count }

    /// Replays `frames` at maximum speed with `config` (YAML) and `flags`, then reads the status.
    static func replay(_ frames: [FaultCaptures.Frame], config: String? = nil, flags: [String] = [], name: String)
        throws -> AirOutcome
    {
        let directory = try TemporaryDirectory(prefix: "bfa", short: true)
        let capture = directory.path + "/air.btsnoop"
        try Data(FaultCaptures.capture(frames)).write(to: URL(fileURLWithPath: capture))
        var arguments = ["--backend", "replay", "--replay", capture, "--speed", "max"] + flags
        if let config {
            try config.write(toFile: directory.path + "/beacond.yaml", atomically: true, encoding: .utf8)
            arguments += ["--config", directory.path + "/beacond.yaml"]
        }
        let daemon = try DaemonProcess(arguments, socket: directory.path + "/s", stateDirectory: directory.path)
        let finished = daemon.waitForLog("holding the final state", timeout: 20)
        if !finished { print("\(name): \(daemon.logText.suffix(2000))") }
        let status = daemon.quickStatus()
        _ = daemon.stop()
        guard finished, let status, daemon.exitStatus == 0 else {
            throw AirFailure(name: name, log: String(daemon.logText.suffix(2000)))
        }
        return AirOutcome(status: status, log: daemon.logText)
    }
}

/// A replay that did not finish, answer status, or exit cleanly: the scenario fails with its log.
struct AirFailure: Error, CustomStringConvertible {
    var name: String
    var log: String
    var description: String { "\(name): the replay did not finish cleanly: \(log)" }
}
