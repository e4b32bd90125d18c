import BLEPayload
import CircuitState
import Glibc
import Logging
import Synchronization

/// A transmitter backend: takes the advertising data to send (nil: none) and runs until stopped.
package protocol BeaconAdvertiserBackend: AnyObject, Sendable {
    func set(_ data: [UInt8]?)
    var state: AdvertiserState { get }
    /// Frames handed to the radio.
    var frames: Int { get }
    var restarts: Int { get }
    func run() async throws
    func stop()
}

/// A radio whose data, state and counts are kept by an `AdvertiserControl` (both of beacond's).
package protocol ControlledAdvertiser: BeaconAdvertiserBackend {
    var control: AdvertiserControl { get }
}

extension ControlledAdvertiser {
    /// Advertising data to send (a complete AD payload), or nil to stop advertising.
    package func set(_ data: [UInt8]?) { control.set(data) }
    package var state: AdvertiserState { control.state }
    /// Frames handed to the radio (each change of data once).
    package var frames: Int { control.frames }
    /// Times the adapter (or bluetoothd) was lost and the frame advertised again.
    package var restarts: Int { control.restarts }
    package func stop() { control.stop() }
}

extension HCIAdvertiser: ControlledAdvertiser {}
extension BlueZAdvertiser: ControlledAdvertiser {}

/// How the transmitter reaches the radio.
package enum BeaconBackend: String, Hashable, Sendable, CaseIterable {
    /// Raw HCI commands on a socket of its own (CAP_NET_RAW).
    case hci
    /// bluetoothd's LEAdvertisingManager1 over the system bus.
    case bluez
}

/// The radio settings both forms of the transmitter take.
package struct BeaconRadio: Hashable, Sendable {
    package var backend: BeaconBackend
    package var adapter: String
    /// Advertising interval, µs.
    package var interval: Int64

    package init(backend: BeaconBackend, adapter: String, interval: Int64) {
        self.backend = backend
        self.adapter = adapter
        self.interval = interval
    }

    package func makeAdvertiser(
        logger: Logger, onState: @escaping @Sendable (AdvertiserState) -> Void = { _ in }
    ) throws(WakeSignal.Failure) -> any BeaconAdvertiserBackend {
        switch backend {
        case .hci:
            var configuration = HCIAdvertiser.Configuration(adapter: adapter)
            configuration.interval = interval
            return try HCIAdvertiser(configuration: configuration, logger: logger, onState: onState)
        case .bluez:
            var configuration = BlueZAdvertiser.Configuration(adapter: adapter)
            configuration.interval = interval
            return try BlueZAdvertiser(configuration: configuration, logger: logger, onState: onState)
        }
    }
}

/// The transmitter: what to advertise (`BeaconFramePlanner`), its persisted sequence, and the
/// backend that puts it on the air. `update` may be called from any thread; the same component
/// serves `beacond beacon` and the daemon's `beacon:` section.
package final class BeaconTransmitter: Sendable {
    package struct Configuration: Hashable, Sendable {
        package var zone: UInt16
        package var backend: String
        package var adapter: String
        /// Where the sequence is kept across restarts; nil keeps it in memory only.
        package var stateDir: String?
        package var companyID: UInt16 = GeoRacingSignal.defaultCompanyID

        package init(zone: UInt16, backend: String, adapter: String, stateDir: String?) {
            self.zone = zone
            self.backend = backend
            self.adapter = adapter
            self.stateDir = stateDir
        }
    }

    private struct Shared {
        var planner: BeaconFramePlanner
        var plan = BeaconPlan.silent(reason: "waiting for its source")
        var input: BeaconInput?
    }

    package let configuration: Configuration
    private let backend: any BeaconAdvertiserBackend
    private let shared: Mutex<Shared>
    private let logger: Logger

    package init(configuration: Configuration, backend: any BeaconAdvertiserBackend, logger: Logger) {
        self.configuration = configuration
        self.backend = backend
        self.logger = logger
        let restored = configuration.stateDir.flatMap { Self.restore(from: $0, logger: logger) }
        shared = Mutex(Shared(planner: BeaconFramePlanner(zone: configuration.zone, restored: restored)))
    }

    private var sequencePath: String? {
        configuration.stateDir.map { $0 + "/" + BeaconSequenceFile.name }
    }

    private static func restore(from directory: String, logger: Logger) -> BeaconSequenceFile.Record? {
        let path = directory + "/" + BeaconSequenceFile.name
        let bytes: [UInt8]
        do throws(BoundedFileError) {
            bytes = try readRegularFile(path, maxBytes: 64)
        } catch {
            if case .open(ENOENT) = error { return nil }
            logger.warning("beacon: \(path) \(error); the sequence starts again from 0")
            return nil
        }
        guard let record = BeaconSequenceFile.decode(bytes) else {
            logger.warning("beacon: \(path) is not \"sequence mode temperature\"; the sequence starts again from 0")
            return nil
        }
        return record
    }

    /// Follows `input`: a new frame content takes the next sequence, which is persisted before
    /// the frame goes on the air; an input to stay silent stops advertising.
    package func update(_ input: BeaconInput) {
        let (plan, changed, record, previous) = shared.withLock { shared in
            let previous = shared.plan
            let (plan, changed) = shared.planner.plan(input)
            shared.plan = plan
            shared.input = input
            return (plan, changed, shared.planner.last, previous)
        }
        if changed, let record, let path = sequencePath {
            do {
                try FileOutput.write(BeaconSequenceFile.encode(record), to: path, mode: 0o644)
            } catch {
                logger.warning("beacon: cannot keep the sequence in \(path): \(error)")
            }
        }
        switch plan {
        case .advertise(let signal):
            backend.set(signal.advertisingData(companyID: configuration.companyID))
        case .silent:
            backend.set(nil)
        }
        if plan != previous { logger.info("beacon: \(Self.describe(plan))") }
    }

    /// "advertising zone 7 red_flag seq 12 11°C (0100070200000c0a0b)", "silent: why".
    package static func describe(_ plan: BeaconPlan) -> String {
        switch plan {
        case .advertise(let signal):
            let temperature = signal.temperature.map { " \($0)°C" } ?? ""
            let frame = "seq \(signal.sequence)\(temperature) (\(hex(signal)))"
            return "advertising zone \(signal.zone) \(signal.mode.name) \(frame)"
        case .silent(let reason):
            return "silent: \(reason)"
        }
    }

    /// The frame's bytes after the company id, as lower-case hex (as `replay --json` prints them).
    static func hex(_ signal: GeoRacingSignal) -> String {
        HexText.string(signal.encoded())
    }

    package var plan: BeaconPlan { shared.withLock { $0.plan } }

    /// The transmitter's part of a status reply.
    package var status: BeaconStatus {
        let plan = self.plan
        var status = BeaconStatus(
            backend: configuration.backend, adapter: configuration.adapter, zone: Int(configuration.zone))
        switch backend.state {
        case .starting:
            status.state = "starting"
        case .advertising:
            status.state = "advertising"
        case .idle:
            status.state = "silent"
        case .down(let reason):
            status.state = "down"
            status.detail = reason
        case .stopped:
            status.state = "stopped"
        }
        switch plan {
        case .advertise(let signal):
            status.mode = signal.mode.name
            status.sequence = Int(signal.sequence)
            status.temperature = signal.temperature.map { Int($0) }
            status.frame = Self.hex(signal)
            if status.state == "silent" { status.state = "starting" }
        case .silent(let reason):
            if status.detail == nil { status.detail = reason }
        }
        status.frames = backend.frames
        status.restarts = backend.restarts
        return status
    }

    package func run() async throws { try await backend.run() }
    package func stop() { backend.stop() }
}
