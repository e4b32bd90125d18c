import BLEPayload
import BeacondTestSupport
import Foundation

/// Captures for the fault-injection scenarios, written with the project's own encoders and
/// btsnoop writer (as `beacond example-capture` is).
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

    /// Writes `bytes` under the test's temporary folder; the path.
    static func write(_ bytes: [UInt8], name: String) throws -> String {
        let path = BeacondProcess.temporaryFile(name)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
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
}
