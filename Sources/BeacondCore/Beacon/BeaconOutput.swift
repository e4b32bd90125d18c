import BLEPayload
import Logging
import NIOCore
import ServiceLifecycle

/// The daemon's own transmitter (`beacon:` section): one more output of the hub. It follows race
/// control as the hub sees it, never the fused mode: each fetch (`.remoteFetched`) as it comes,
/// and each published state's `remote` part, which says when race control went stale. It never
/// calls the hub back; its state is a part of the status reply. The daemon connects it after the
/// socket's and MQTT's outputs, so a change's sequence-file write never delays the kiosks' line.
package final class BeaconOutput: HubOutput, StatusContributor, Service {
    package let transmitter: BeaconTransmitter
    package let heartbeat: BeaconHeartbeat?
    /// Says when the transmitter's status changes (`onStatusChange`).
    private let relay: BeaconStatusRelay
    /// Whether the daemon has a `remote.url`: without one, a state's null `remote` is for good.
    private let followsRaceControl: Bool
    /// Where the transmitter's once-a-second look for re-signing runs: the hub's loop.
    private let timerLoop: (any EventLoop)?
    private let logger: Logger

    package init(
        transmitter: BeaconTransmitter, heartbeat: BeaconHeartbeat? = nil, relay: BeaconStatusRelay = .init(),
        followsRaceControl: Bool, timerLoop: (any EventLoop)? = nil, logger: Logger
    ) {
        self.followsRaceControl = followsRaceControl
        self.timerLoop = timerLoop
        self.transmitter = transmitter
        self.heartbeat = heartbeat
        self.relay = relay
        self.logger = logger
        relay.watch(transmitter)
    }

    /// Calls `listener` with the transmitter's status (without the heartbeat's counts) now and
    /// at each change, on the thread that made it: MQTT's state payload carries it.
    package func onStatusChange(_ listener: @escaping @Sendable (BeaconStatus) -> Void) {
        relay.listen(listener)
    }

    /// The output for `configuration`, or nil without `beacon.zone`. `keyring` signs v3 frames.
    /// - Throws: `WakeSignal.Failure`, or `RemoteConfigurationError` for the heartbeat's URL or CA file.
    package static func make(
        _ configuration: DaemonConfiguration.Beacon, stateDir: String, followsRaceControl: Bool,
        keyring: VenueKeyring? = nil, companyID: UInt16 = GeoRacingSignal.defaultCompanyID,
        timerLoop: (any EventLoop)? = nil, logger: Logger
    ) throws -> BeaconOutput? {
        guard let zone = configuration.zone else { return nil }
        let radio = BeaconRadio(
            backend: configuration.backend, adapter: configuration.adapter, interval: configuration.interval)
        let relay = BeaconStatusRelay()
        let advertiser = try radio.makeAdvertiser(logger: logger) { _ in relay.refresh() }
        var transmitterConfiguration = BeaconTransmitter.Configuration(
            zone: zone, backend: configuration.backend.rawValue, adapter: configuration.adapter, stateDir: stateDir)
        transmitterConfiguration.companyID = companyID
        transmitterConfiguration.frameVersion = configuration.frameVersion
        transmitterConfiguration.signer = keyring.map {
            BeaconSigner(keyring: $0, sourceID: configuration.sourceID ?? zone, companyID: companyID)
        }
        let transmitter = BeaconTransmitter(
            configuration: transmitterConfiguration, backend: advertiser, logger: logger)
        let heartbeat = try configuration.heartbeatURL.map { url in
            try BeaconHeartbeat(
                configuration: .init(
                    url: url, caFile: configuration.heartbeatCAFile,
                    uid: configuration.uid ?? BeaconHeartbeat.defaultUID(),
                    hasScreen: true),
                transmitter: transmitter, logger: logger)
        }
        return BeaconOutput(
            transmitter: transmitter, heartbeat: heartbeat, relay: relay, followsRaceControl: followsRaceControl,
            timerLoop: timerLoop, logger: logger)
    }

    package func receive(_ event: HubEvent) {
        switch event {
        case .published(let publication) where publication.message.remote == nil:
            transmitter.update(
                .none(
                    reason: followsRaceControl
                        ? "race control not reached yet" : "the daemon follows no race control (remote.url is not set)")
            )
        case .published(let publication):
            transmitter.update(BeaconDaemonFollower.input(.state(publication.message)))
        case .remoteFetched(let snapshot):
            transmitter.update(
                .raceControl(mode: snapshot.trackMode, fresh: true, temperature: snapshot.temperature, problem: nil))
        case .beaconUpdate:
            return
        }
        relay.refresh()
    }

    package func contribute(to status: inout StatusMessage, for query: StatusQuery) {
        status.beacon = transmitter.status
        status.beacon?.heartbeat = heartbeat?.status
    }

    /// Advertises until graceful shutdown, which disables advertising. A radio that cannot be
    /// used at all (no permission) is reported in the status and the log; the daemon runs on
    /// without its transmitter. A missing adapter, or no Bluetooth in the kernel yet, is retried.
    package func run() async throws {
        let heartbeats = heartbeat.map { heartbeat in Task { await heartbeat.run() } }
        defer { heartbeats?.cancel() }
        do {
            if let timerLoop { try await transmitter.run(timersOn: timerLoop) } else { try await transmitter.run() }
        } catch {
            logger.error("beacon: \(error); running without the transmitter")
            try? await gracefulShutdown()
        }
    }
}
