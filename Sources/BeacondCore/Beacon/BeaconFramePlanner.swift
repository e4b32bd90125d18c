import BLEPayload
import CircuitState

/// What a beacon advertises: only race control's state, or a hand-set mode; never what was heard
/// over Bluetooth (beacons that repeat each other would keep a flag alive for ever).
package enum BeaconInput: Hashable, Sendable {
    /// A mode set by hand (`beacond beacon --mode`).
    case handSet(TrackMode)
    /// Race control's state as the daemon or the poller last saw it: `mode` counts only while
    /// `fresh`; `temperature` in °C when race control gave one.
    case raceControl(mode: TrackMode?, fresh: Bool, temperature: Double?, problem: String?)
    /// Nothing to follow yet, with why.
    case none(reason: String)
}

/// What the transmitter should be doing.
package enum BeaconPlan: Hashable, Sendable {
    case advertise(GeoRacingSignal)
    /// Not advertising, and why (stale data never looks fresh over the air).
    case silent(reason: String)
}

/// Turns the beacon's input into frames, bit-compatible with GeoRacing's Windows beacon: a v1
/// frame with the zone, the mode byte, flags 0, the sequence and a TTL of 10 s, plus the
/// temperature byte when race control gave a temperature. The sequence increases on every change
/// of mode (as v3 carries it: yellow flag and VSC apart) or whole-degree temperature and is
/// persisted (`BeaconSequenceFile`), so a restarted beacon never sends a changed frame under an
/// old sequence. The transmitter signs the same frame as v3 (`BeaconSigner`).
package struct BeaconFramePlanner: Sendable {
    /// The Windows beacon's TTL.
    package static let ttl: UInt8 = 10

    package let zone: UInt16
    /// The last frame content and its sequence, as persisted.
    package private(set) var last: BeaconSequenceFile.Record?

    package init(zone: UInt16, restored: BeaconSequenceFile.Record?) {
        self.zone = zone
        last = restored
    }

    /// v1 has four mode bytes: yellow flag and VSC go out as 1, GeoRacing's "caution" (which its
    /// Windows beacon also sends for CONGESTION and SAFETY_CAR); the signed v3 frame carries all seven.
    package static func modeByte(_ mode: TrackMode) -> GeoRacingMode {
        switch mode {
        case .normal: .normal
        case .yellowFlag, .vsc, .safetyCar: .safetyCar
        case .redFlag: .redFlag
        case .evacuation: .evacuation
        }
    }

    /// Race control's temperature as the frame's byte: rounded to whole degrees and clamped to
    /// 0–255 as the Windows beacon clamps it; nil without a finite temperature.
    package static func temperatureByte(_ celsius: Double?) -> UInt8? {
        guard let celsius, celsius.isFinite else { return nil }
        let rounded = celsius.rounded(.toNearestOrAwayFromZero)
        return UInt8(min(255, max(0, rounded)))
    }

    /// The plan for `input`. A new frame content takes the next sequence; the caller persists
    /// `last` before advertising it (`changed`).
    /// Notes the signing time of the v3 frame about to go out; the caller persists `last`.
    package mutating func signed(at signedAt: UInt32) {
        last?.signedAt = signedAt
    }

    package mutating func plan(_ input: BeaconInput) -> (plan: BeaconPlan, changed: Bool) {
        let mode: TrackMode
        var temperature: UInt8?
        switch input {
        case .handSet(let handSet):
            mode = handSet
        case .raceControl(let remote, let fresh, let celsius, let problem):
            guard fresh, let remote else {
                let why = problem.map { ": \($0)" } ?? ""
                let reason =
                    fresh ? "race control reports no mode" : "race control's state is stale or unreachable\(why)"
                return (.silent(reason: reason), false)
            }
            mode = remote
            temperature = Self.temperatureByte(celsius)
        case .none(let reason):
            return (.silent(reason: reason), false)
        }
        let byte = Self.modeByte(mode)
        let v3Byte = mode.signedFrameMode.rawValue
        var changed = false
        if last?.mode != v3Byte || last?.temperature != temperature {
            let sequence = last.map { $0.sequence &+ 1 } ?? 0
            last = BeaconSequenceFile.Record(
                sequence: sequence, mode: v3Byte, temperature: temperature, signedAt: last?.signedAt)
            changed = true
        }
        let signal = GeoRacingSignal.circuit(
            zone: zone, mode: byte, sequence: last?.sequence ?? 0, ttl: Self.ttl, temperature: temperature)
        return (.advertise(signal), changed)
    }
}

/// The beacon's last frame content and sequence in its state directory (`beacon-sequence`), one
/// line: `sequence mode temperature [signed_at]` (`-` for no temperature; the mode as v3 numbers
/// it; the signing time of the last v3 frame sent, which the next one never goes below). A file
/// that cannot be read as that starts the sequence again from 0 and says so; it is never an error
/// that stops the beacon.
package enum BeaconSequenceFile {
    package static let name = "beacon-sequence"

    package struct Record: Hashable, Sendable {
        package var sequence: UInt16
        /// The v3 mode byte (0–5; v1's four keep their numbers).
        package var mode: UInt8
        package var temperature: UInt8?
        /// The last v3 frame's signing time; nil before any was sent.
        package var signedAt: UInt32?

        package init(sequence: UInt16, mode: UInt8, temperature: UInt8?, signedAt: UInt32? = nil) {
            self.sequence = sequence
            self.mode = mode
            self.temperature = temperature
            self.signedAt = signedAt
        }
    }

    package static func encode(_ record: Record) -> [UInt8] {
        let signed = record.signedAt.map { " \($0)" } ?? ""
        return Array("\(record.sequence) \(record.mode) \(record.temperature.map { "\($0)" } ?? "-")\(signed)\n".utf8)
    }

    package static func decode(_ bytes: [UInt8]) -> Record? {
        guard bytes.count <= 64, let text = String(validating: bytes, as: UTF8.self) else { return nil }
        let fields = text.split(separator: " ", omittingEmptySubsequences: false)
            .map { $0.trimmingSuffix("\n") }
        guard fields.count == 3 || fields.count == 4, let sequence = UInt16(fields[0]), let mode = UInt8(fields[1]),
            mode <= 5
        else {
            return nil
        }
        var signedAt: UInt32?
        if fields.count == 4 {
            guard let time = UInt32(fields[3]) else { return nil }
            signedAt = time
        }
        if fields[2] == "-" { return Record(sequence: sequence, mode: mode, temperature: nil, signedAt: signedAt) }
        guard let temperature = UInt8(fields[2]) else { return nil }
        return Record(sequence: sequence, mode: mode, temperature: temperature, signedAt: signedAt)
    }
}

extension Substring {
    fileprivate func trimmingSuffix(_ suffix: String) -> Substring {
        hasSuffix(suffix) ? dropLast(suffix.count) : self
    }
}
