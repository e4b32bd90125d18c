import BLEPayload
import BeacondClient
import CircuitState
import Logging

/// Where advertisements come from.
package enum ScannerBackend: String, Hashable, Sendable, CaseIterable {
    case hci
    case bluez
    case replay
}

/// How fast `--backend replay` moves its virtual clock.
enum ReplaySpeed: Hashable, Sendable, CustomStringConvertible {
    /// Jump straight to the next event.
    case max
    /// Virtual time runs `millionths / 1_000_000` × real time; `1_000_000` is real time.
    case factor(millionths: Int64)

    static let realTime = ReplaySpeed.factor(millionths: 1_000_000)
    /// The largest finite factor accepted: 10,000 × real time.
    static let maxFactorMillionths: Int64 = 10_000 * 1_000_000

    /// Virtual microseconds that pass in `real` real microseconds; nil for `.max`.
    func virtualMicros(forReal real: Int64) -> Int64? {
        guard case .factor(let millionths) = self else { return nil }
        return Self.scale(real, by: millionths, dividedBy: 1_000_000)
    }

    /// Real microseconds to wait for `virtual` virtual microseconds to pass; nil for `.max`.
    func realMicros(forVirtual virtual: Int64) -> Int64? {
        guard case .factor(let millionths) = self, millionths > 0 else { return nil }
        return Self.scale(virtual, by: 1_000_000, dividedBy: millionths)
    }

    /// `value × multiplier / divisor` for non-negative operands, rounded down, saturating instead of
    /// overflowing; both factors stay below 2^34, so the partial products fit.
    private static func scale(_ value: Int64, by multiplier: Int64, dividedBy divisor: Int64) -> Int64 {
        guard value > 0 else { return 0 }
        let (whole, overflow) = (value / divisor).multipliedReportingOverflow(by: multiplier)
        if overflow { return .max }
        let (sum, sumOverflow) = whole.addingReportingOverflow(value % divisor * multiplier / divisor)
        return sumOverflow ? .max : sum
    }

    /// `max`, or the factor as a decimal (`1`, `2.5`).
    var description: String {
        switch self {
        case .max: "max"
        case .factor(let millionths): DecimalText.format(micros: millionths)
        }
    }
}

/// Everything `beacond run` is configured with: the config file, then the flags on top.
///
/// Durations are integer microseconds. Relative paths in a config file are resolved against the
/// file's directory; relative paths given as flags are left to the working directory.
package struct DaemonConfiguration: Hashable, Sendable {
    static let defaultPath = "/etc/beacond/beacond.yaml"

    package struct Scanner: Hashable, Sendable {
        static let defaultAdapter = "hci0"
        static let defaultSilenceRestart: Int64 = 60_000_000
        static let defaultBlueZRefresh: Int64 = 4_000_000

        package var backend: ScannerBackend = .hci
        package var adapters = ScannerAdapters.default
        package var companyID: UInt16 = GeoRacingSignal.defaultCompanyID
        /// The capture `--backend replay` reads.
        var replay: String?
        var speed: ReplaySpeed = .realTime
        var loop = false
        /// Restart the scanner when it has reported nothing for this long; 0 turns this off.
        var silenceRestart: Int64 = defaultSilenceRestart
        /// Active scanning (scan requests) instead of passive listening; hci backend only.
        var active = false
        /// hci: drop in the kernel the reports that carry no GeoRacing frame (`HCIReportFilter`),
        /// except while a client looks at every device or the daemon records.
        var kernelFilter = true
        /// How often and how long the controller listens, ms (HCI units are 0.625 ms). The default
        /// listens continuously: a beacon's every repeat matters for its TTL.
        var scanIntervalMs = 100
        var scanWindowMs = 100
        /// What an HCI controller accepts (2.5 ms to 10.24 s), in whole milliseconds.
        static let scanTimingRange = 3...10_240
        /// bluez backend: restart discovery this often (µs) while no advertisement monitor is active,
        /// so the controller's duplicate filter lets a repeated advertisement through again; 0: never.
        var blueZRefresh: Int64 = defaultBlueZRefresh
    }

    package struct Remote: Hashable, Sendable {
        static let defaultPollInterval: Int64 = 5_000_000
        static let defaultTimeout: Int64 = 3_000_000

        /// `http://`, `https://` or `file://`; nil: no remote state.
        var url: String?
        var pollInterval: Int64 = defaultPollInterval
        var timeout: Int64 = defaultTimeout
        var staleAfter: Int64 = FusionConfiguration.defaultStaleAfter
        /// PEM certificates to trust instead of the system store.
        var caFile: String?
        /// A file holding the bearer token for the Authorization header.
        var bearerTokenFile: String?

        /// No remote state: the daemon runs on beacons alone.
        package init() {}
    }

    struct Fusion: Hashable, Sendable {
        var policy: Policy = .safety
        var minRSSI: Int = FusionConfiguration.defaultMinRSSI
        /// Empty: every zone.
        var zones: Set<UInt16> = []
        var maxTTL: Int64 = FusionConfiguration.defaultMaxTTL
        /// Empty: everything.
        var allow = AllowList()
        /// Metres; nil: no distance gate.
        var maxDistance: Double?
        var maxEntries: Int = FusionConfiguration.defaultMaxEntries
        /// How long a lowered or cleared beacon claim stays in force.
        var deescalationHold: Int64 = FusionConfiguration.defaultDeescalationHold
        /// Received power at 1 m, dBm, for every beacon; nil: derived per beacon.
        var referencePower: Double?
        /// What GeoRacing staff command frames do.
        var commandFrames: CommandFramePolicy = .honour
    }

    package struct Beacon: Hashable, Sendable {
        /// The zone advertised; nil: no transmitter.
        package var zone: UInt16?
        package var backend = BeaconBackend.hci
        package var adapter = "hci0"
        /// Advertising interval, µs.
        package var interval: Int64 = 100_000
        /// The GeoRacing frames advertised: v1, signed v3, or both in turn.
        package var frameVersion = BeaconFrameVersion.v1
        /// The transmitter's id in its signed frames; nil: the zone's number.
        package var sourceID: UInt16?
        /// GeoRacing's heartbeat to race control's panel; nil: none.
        package var heartbeatURL: String?
        package var heartbeatCAFile: String?
        /// The heartbeat's `beacon_uid`; nil: `beacond-HOSTNAME`.
        package var uid: String?
    }

    struct Socket: Hashable, Sendable {
        static let defaultPath = TrackStateClient.defaultPath
        static let defaultMaxClients = 1024
        /// `sun_path` holds 108 bytes including the terminating NUL.
        static let maxPathBytes = 107

        var path: String = defaultPath
        var maxClients: Int = defaultMaxClients
    }

    package struct Log: Hashable, Sendable {
        package var level: Logger.Level = .info
    }

    package struct Record: Hashable, Sendable {
        static let defaultMaxMB = 100
        static let defaultKeep = 5

        /// Where to record the advertising reports the scanner sees; nil: no recording.
        var path: String?
        var maxMB: Int = defaultMaxMB
        /// Rotated files kept besides the current one.
        var keep: Int = defaultKeep
    }

    package struct Zones: Hashable, Sendable {
        /// Display names sent to clients; none by default.
        package var names = ZoneNames()
    }

    /// GeoRacing v3 frames (docs/security.md).
    package struct Security: Hashable, Sendable {
        /// The venue's keys (`beacond keys new`); nil: v3 frames cannot be verified, and none counts.
        package var keyFile: String?
        /// What unsigned frames count for.
        package var unsigned = UnsignedFramePolicy.accept
        /// How far a v3 frame's signing time may lie from this machine's clock, µs.
        package var clockWindow = SignedFrameVerifier.defaultClockWindow
    }

    package struct Metrics: Hashable, Sendable {
        /// Where `GET /metrics` is served (docs/metrics.md); nil: no metrics endpoint.
        package var listen: WebKioskAddress?
    }

    package static let defaultStateDir = "/var/lib/beacond"

    package var scanner = Scanner()
    package var remote = Remote()
    var fusion = Fusion()
    var socket = Socket()
    var stateDir: String = defaultStateDir
    package var log = Log()
    package var record = Record()
    package var zones = Zones()
    package var metrics = Metrics()
    /// The venue-wide MQTT publisher (docs/mqtt.md); off without `mqtt.url`.
    package var mqtt = Mqtt()
    /// The daemon's own transmitter (docs/beacon.md); off without `beacon.zone`.
    package var beacon = Beacon()
    package var security = Security()
    /// The `kiosk.*` keys: read by `beacond kiosk --config`, accepted and ignored by the daemon.
    package var kiosk = KioskSettings()
    /// Where each key's value came from, for messages. Not part of equality.
    var origins = KeyOrigins()

    package init() {}

    /// The fusion engine's settings.
    package func fusionConfiguration() -> FusionConfiguration {
        FusionConfiguration(
            policy: fusion.policy, minRSSI: fusion.minRSSI, zones: fusion.zones, allow: fusion.allow,
            maxTTL: fusion.maxTTL, maxEntries: fusion.maxEntries, staleAfter: engineStaleAfter,
            maxDistance: fusion.maxDistance, referencePower: fusion.referencePower,
            deescalationHold: fusion.deescalationHold, commandFrames: fusion.commandFrames,
            unsignedFrames: security.unsigned)
    }

    /// `remote.stale_after` on the engine's clock. Race control polled live is judged on the real
    /// clock, since its polls run in real time; the replay backend's engine runs on capture time at
    /// `--speed` × real time, so there the same real span is `speed` × `stale_after` of capture time
    /// (at ×20 a poll every 5 s real is 100 s of capture time apart, and 15 s unscaled would make the
    /// remote stale, and the state flap, between every two polls). At `--speed max` the capture clock
    /// only moves with the inputs, and `stale_after` stays as it is.
    var engineStaleAfter: Int64 {
        guard scanner.backend == .replay, remote.url != nil,
            let scaled = scanner.speed.virtualMicros(forReal: remote.staleAfter)
        else { return remote.staleAfter }
        return scaled
    }
}

/// Where configuration values came from: a file position or a flag. Every instance compares equal,
/// so two configurations with the same values are equal wherever the values came from.
struct KeyOrigins: Hashable, Sendable {
    enum Origin: Hashable, Sendable {
        case file(path: String, line: Int?, column: Int?)
        case flag(String)
    }

    var byKey: [ConfigKey: Origin] = [:]

    subscript(key: ConfigKey) -> Origin? {
        get { byKey[key] }
        set { byKey[key] = newValue }
    }

    /// A problem with `key`, placed where its value came from (nowhere: a default).
    func problem(_ key: ConfigKey, reason: String) -> ConfigurationProblem {
        switch byKey[key] {
        case .file(let path, let line, let column)?:
            ConfigurationProblem(file: path, key: key.rawValue, line: line, column: column, reason: reason)
        case .flag(let flag)?:
            ConfigurationProblem(flag: flag, key: key.rawValue, reason: reason)
        case nil:
            ConfigurationProblem(key: key.rawValue, reason: reason)
        }
    }

    static func == (lhs: KeyOrigins, rhs: KeyOrigins) -> Bool { true }
    func hash(into hasher: inout Hasher) {}
}

/// Decimal text for integer micro-units: `2500000` → `2.5`.
package enum DecimalText {
    package static func format(micros: Int64) -> String {
        let sign = micros < 0 ? "-" : ""
        let magnitude = micros.magnitude
        let whole = magnitude / 1_000_000
        var fraction = magnitude % 1_000_000
        guard fraction != 0 else { return sign + String(whole) }
        var digits = 6
        while fraction % 10 == 0 {
            fraction /= 10
            digits -= 1
        }
        let text = String(fraction)
        return sign + String(whole) + "." + String(repeating: "0", count: digits - text.count) + text
    }
}
