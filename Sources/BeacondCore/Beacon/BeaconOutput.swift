import Logging
import ServiceLifecycle

/// The daemon's own transmitter (`beacon:` section): one more output of the hub. It follows race
/// control as the hub sees it, never the fused mode: each fetch (`.remoteFetched`) as it comes,
/// and each published state's `remote` part, which says when race control went stale. It never
/// calls the hub back; its state is a part of the status reply. The daemon connects it after the
/// socket's and MQTT's outputs, so a change's sequence-file write never delays the kiosks' line.
package final class BeaconOutput: HubOutput, StatusContributor, Service {
    package let transmitter: BeaconTransmitter
    package let heartbeat: BeaconHeartbeat?
    private let logger: Logger

    package init(transmitter: BeaconTransmitter, heartbeat: BeaconHeartbeat? = nil, logger: Logger) {
        self.transmitter = transmitter
        self.heartbeat = heartbeat
        self.logger = logger
    }

    /// The output for `configuration`, or nil without `beacon.zone`.
    /// - Throws: `WakeSignal.Failure`, or `RemoteConfigurationError` for the heartbeat's URL or CA file.
    package static func make(_ configuration: DaemonConfiguration.Beacon, stateDir: String, logger: Logger) throws
        -> BeaconOutput?
    {
        guard let zone = configuration.zone else { return nil }
        var radio = HCIAdvertiser.Configuration(adapter: configuration.adapter)
        radio.interval = configuration.interval
        let advertiser = try HCIAdvertiser(configuration: radio, logger: logger)
        let transmitter = BeaconTransmitter(
            configuration: .init(
                zone: zone, backend: "hci", adapter: configuration.adapter, stateDir: stateDir),
            backend: advertiser, logger: logger)
        let heartbeat = try configuration.heartbeatURL.map { url in
            try BeaconHeartbeat(
                configuration: .init(
                    url: url, caFile: configuration.heartbeatCAFile,
                    uid: configuration.uid ?? BeaconHeartbeat.defaultUID(),
                    hasScreen: true),
                transmitter: transmitter, logger: logger)
        }
        return BeaconOutput(transmitter: transmitter, heartbeat: heartbeat, logger: logger)
    }

    package func receive(_ event: HubEvent) {
        switch event {
        case .published(let publication):
            transmitter.update(BeaconDaemonFollower.input(.state(publication.message)))
        case .remoteFetched(let snapshot):
            transmitter.update(
                .raceControl(mode: snapshot.trackMode, fresh: true, temperature: snapshot.temperature, problem: nil))
        case .beaconUpdate:
            break
        }
    }

    package func contribute(to status: inout StatusMessage, for query: StatusQuery) {
        status.beacon = transmitter.status
        status.beacon?.heartbeat = heartbeat?.status
    }

    /// Advertises until graceful shutdown, which disables advertising. A radio that cannot be
    /// used at all (no Bluetooth, no permission) is reported in the status and the log; the
    /// daemon runs on without its transmitter.
    package func run() async throws {
        let heartbeats = heartbeat.map { heartbeat in Task { await heartbeat.run() } }
        defer { heartbeats?.cancel() }
        do {
            try await transmitter.run()
        } catch {
            logger.error("beacon: \(error); running without the transmitter")
            try? await gracefulShutdown()
        }
    }
}
