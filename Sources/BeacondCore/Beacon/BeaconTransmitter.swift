import BLEPayload
import CircuitState
import Glibc
import Logging
import NIOCore
import NIOPosix
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
///
/// Signed v3 frames (`frameVersion` v3 or both) are signed again at least every 5 s, so that their
/// signing time T stays fresh; T never goes below the last one sent, which is persisted with the
/// sequence. `both` sends v1 and v3 in turn, a second each.
package final class BeaconTransmitter: Sendable {
    package struct Configuration: Hashable, Sendable {
        package var zone: UInt16
        package var backend: String
        package var adapter: String
        /// Where the sequence is kept across restarts; nil keeps it in memory only.
        package var stateDir: String?
        package var companyID: UInt16 = GeoRacingSignal.defaultCompanyID
        package var frameVersion = BeaconFrameVersion.v1
        /// Signs v3 frames; needed unless `frameVersion` is v1.
        package var signer: BeaconSigner?

        package init(zone: UInt16, backend: String, adapter: String, stateDir: String?) {
            self.zone = zone
            self.backend = backend
            self.adapter = adapter
            self.stateDir = stateDir
        }
    }

    /// The longest a signed frame's T is kept before it is signed again.
    package static let resignInterval: UInt32 = 5
    /// How often the transmitter looks again (re-signing, `both`'s turns).
    static let tickInterval: TimeAmount = .seconds(1)

    private struct Shared {
        var planner: BeaconFramePlanner
        var plan = BeaconPlan.silent(reason: "waiting for its source")
        var input: BeaconInput?
        /// The frame on the air now (v1 or v3); nil while silent.
        var onAir: GeoRacingSignal?
        /// The last v3 frame signed: kept on the air until its T is due again.
        var lastSigned: GeoRacingSignal?
        /// Why a frame to advertise is not on the air (no key signs today).
        var signingProblem: String?
        /// `both`: whether the v3 frame has the current turn.
        var v3Turn = true
        /// The record last written to the state directory.
        var persisted: BeaconSequenceFile.Record?
    }

    package let configuration: Configuration
    private let backend: any BeaconAdvertiserBackend
    private let shared: Mutex<Shared>
    private let logger: Logger
    /// The wall clock, Unix µs, that v3 frames are signed by.
    private let wallClock: @Sendable () -> Int64

    package init(
        configuration: Configuration, backend: any BeaconAdvertiserBackend, logger: Logger,
        wallClock: @escaping @Sendable () -> Int64 = { MonotonicClock.wallMicros() }
    ) {
        self.configuration = configuration
        self.backend = backend
        self.logger = logger
        self.wallClock = wallClock
        let restored = configuration.stateDir.flatMap { Self.restore(from: $0, logger: logger) }
        shared = Mutex(
            Shared(planner: BeaconFramePlanner(zone: configuration.zone, restored: restored), persisted: restored))
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
        let now = wallClock()
        let (plan, previous, onAir, record) = shared.withLock { shared in
            let previous = shared.plan
            shared.plan = shared.planner.plan(input).plan
            shared.input = input
            let onAir = choose(&shared, at: now)
            return (shared.plan, previous, onAir, unsaved(&shared))
        }
        persist(record)
        backend.set(onAir?.advertisingData(companyID: configuration.companyID))
        if plan != previous { logger.info("beacon: \(Self.describe(plan))") }
    }

    /// Signs again when T is due and takes `both`'s next turn: once a second while it runs.
    func tick() {
        let now = wallClock()
        let (changed, onAir, record) = shared.withLock { shared in
            shared.v3Turn.toggle()
            let before = shared.onAir
            let onAir = choose(&shared, at: now)
            return (onAir != before, onAir, unsaved(&shared))
        }
        persist(record)
        if changed { backend.set(onAir?.advertisingData(companyID: configuration.companyID)) }
    }

    /// The frame to put on the air for the plan in force at wall time `now`: v1, or v3 signed at
    /// T, where T is kept while it is younger than `resignInterval` and the content is unchanged,
    /// and is never below the last T sent.
    private func choose(_ shared: inout Shared, at now: Int64) -> GeoRacingSignal? {
        shared.signingProblem = nil
        guard case .advertise(let frame) = shared.plan, let record = shared.planner.last else {
            shared.onAir = nil
            return nil
        }
        let sendsV3 = configuration.frameVersion == .v3 || (configuration.frameVersion == .both && shared.v3Turn)
        guard sendsV3, let signer = configuration.signer else {
            shared.onAir = frame
            return frame
        }
        let second = UInt32(clamping: max(0, now) / 1_000_000)
        if let current = shared.lastSigned, let signature = current.signature, current.sequence == frame.sequence,
            current.temperature == (frame.temperature ?? 0), second < signature.signedAt &+ Self.resignInterval,
            signature.signedAt >= (record.signedAt ?? 0)
        {
            // Its T is still young and its content unchanged: the same bytes, no new HMAC.
            shared.onAir = current
            return current
        }
        let signedAt = max(second, record.signedAt ?? 0)
        guard let signed = signer.sign(frame, mode: record.mode, signedAt: signedAt) else {
            shared.signingProblem = "no key in the key file signs \(DayNumber.format(VenueKeyring.day(of: signedAt)))"
            shared.onAir = nil
            return nil
        }
        shared.planner.signed(at: signedAt)
        shared.lastSigned = signed
        shared.onAir = signed
        return signed
    }

    /// The planner's record when it differs from the one last persisted.
    private func unsaved(_ shared: inout Shared) -> BeaconSequenceFile.Record? {
        guard let record = shared.planner.last, record != shared.persisted else { return nil }
        shared.persisted = record
        return record
    }

    private func persist(_ record: BeaconSequenceFile.Record?) {
        guard let record, let path = sequencePath else { return }
        do {
            try FileOutput.write(BeaconSequenceFile.encode(record), to: path, mode: 0o644)
        } catch {
            logger.warning("beacon: cannot keep the sequence in \(path): \(error)")
        }
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

    /// The frame on the air now, v1 or v3; nil while silent.
    package var onAir: GeoRacingSignal? { shared.withLock { $0.onAir } }

    /// The transmitter's part of a status reply.
    package var status: BeaconStatus {
        let (plan, onAir, record, signingProblem) = shared.withLock {
            ($0.plan, $0.onAir, $0.planner.last, $0.signingProblem)
        }
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
        status.frameVersion = configuration.frameVersion.rawValue
        switch plan {
        case .advertise(let signal) where onAir != nil:
            status.mode = record.map { GeoRacingMode(v3RawValue: $0.mode).name } ?? signal.mode.name
            status.sequence = Int(signal.sequence)
            status.temperature = signal.temperature.map { Int($0) }
            status.frame = onAir.map(Self.hex)
            status.signedAt = onAir?.signature.map { Int($0.signedAt) }
            if status.state == "silent" { status.state = "starting" }
        case .advertise:
            // Nothing it may send (no key signs today); a radio that is down stays down.
            if status.state != "down" { status.state = "silent" }
            status.detail = status.detail ?? signingProblem
        case .silent(let reason):
            if status.detail == nil { status.detail = reason }
        }
        status.frames = backend.frames
        status.restarts = backend.restarts
        return status
    }

    /// Runs the radio until stopped; while it sends signed frames, looks again once a second
    /// (`tick`) on `loop`'s timer.
    package func run(timersOn loop: any EventLoop = MultiThreadedEventLoopGroup.singleton.next()) async throws {
        guard configuration.frameVersion.signs else { return try await backend.run() }
        let ticks = Task {
            while !Task.isCancelled {
                do {
                    try await loop.wait(for: Self.tickInterval)
                } catch {
                    return
                }
                tick()
            }
        }
        defer { ticks.cancel() }
        try await backend.run()
    }
    package func stop() { backend.stop() }
}
