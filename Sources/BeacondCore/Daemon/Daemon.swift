import BLEPayload
import CircuitState
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import UnixSignals

/// Why the daemon could not start: one clear sentence for the operator.
struct DaemonStartError: Error, CustomStringConvertible {
    let description: String
}

/// `beacond run`: the hub on one event loop, the socket server, a scanner backend, the remote
/// poller, SIGHUP reloads and systemd notifications, run as a service group until SIGTERM or SIGINT.
package final class Daemon {
    private let configurationPath: String?
    /// `status.config`: the file in force, its digest, the reload counts.
    private let configInForce: ConfigInForce
    private let overrides: DaemonOverrides
    private(set) var configuration: DaemonConfiguration
    private let levelControl: LogLevelControl
    let logger: Logger
    private let group: MultiThreadedEventLoopGroup
    /// AsyncHTTPClient's own loop, so TLS handshakes and body parsing never delay the hub's fan-out.
    /// Created only when there is a remote to poll.
    private let httpGroup: MultiThreadedEventLoopGroup?
    let hub: TrackStateHub
    private let publisher: TrackStatePublisher
    private let status: StatusBoard
    private let server: TrackStateServer
    private let notifier = SystemdNotifier()
    private let backend: (any Service)?
    private let poller: RemoteStatePoller?
    /// With `metrics.listen`: the Prometheus endpoint (docs/metrics.md).
    private let metricsServer: MetricsServer?
    /// With `mqtt.url`: the venue-wide MQTT publisher (docs/mqtt.md).
    private let mqtt: MqttPublisher?
    /// With `beacon.zone`: the daemon's own transmitter (docs/beacon.md).
    private let beacon: BeaconOutput?
    /// The devices heard that are not GeoRacing beacons, for `{"cmd":"status","devices":true}`.
    private let devices: NearbyDeviceTable
    /// `status.signed`'s key file and key ids (Daemon+Verification.swift).
    let keyStatus: VenueKeyStatus

    /// `keyring`: the key file of `security.key_file`, read by the command (a bad one is a
    /// configuration error, exit 78).
    package init(
        configuration: DaemonConfiguration, configurationPath: String?, configurationFile: ConfigFileIdentity?,
        overrides: DaemonOverrides, keyring: VenueKeyring?, levelControl: LogLevelControl, logger: Logger
    ) throws {
        self.configuration = configuration
        self.configurationPath = configurationPath
        configInForce = ConfigInForce(file: configurationFile)
        self.overrides = overrides
        self.levelControl = levelControl
        self.logger = logger
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let scanner = configuration.scanner

        let clock: EngineClock
        var replayClock: ReplayClock?
        switch scanner.backend {
        case .replay:
            guard let capture = scanner.replay else {
                throw DaemonStartError(description: "--backend replay needs a capture: --replay FILE (scanner.replay)")
            }
            let start: Int64
            do {
                start = try ReplayBackend.firstTimestamp(of: capture) ?? MonotonicClock.wallMicros()
            } catch {
                throw DaemonStartError(description: "cannot replay: \(error)")
            }
            let speed: ReplayClock.Speed =
                switch scanner.speed {
                case .max: .maximum
                case .factor(let millionths): .factor(Double(millionths) / 1_000_000)
                }
            if scanner.loop, speed == .maximum {
                throw DaemonStartError(description: "--loop needs a finite --speed: at max a loop never rests")
            }
            if configuration.record.path != nil {
                throw DaemonStartError(
                    description:
                        "--record records what the hci backend receives; the replay backend has nothing to record")
            }
            let virtual = ReplayClock(start: start, speed: speed)
            replayClock = virtual
            clock = virtual
        case .hci, .bluez:
            clock = BootClock()
        }

        hub = TrackStateHub(
            eventLoop: loop, configuration: configuration.fusionConfiguration(), zoneNames: configuration.zones.names,
            clock: clock,
            backend: scanner.backend.rawValue, adapters: scanner.backend == .replay ? [] : scanner.adapters.names,
            copyFilter: scanner.backend != .replay && scanner.adapters.filtersCopies ? AdapterCopyFilter() : nil,
            logger: logger)
        keyStatus = VenueKeyStatus(path: configuration.security.keyFile, keyring: keyring)
        try Self.startVerification(hub: hub, configuration: configuration, keyring: keyring, logger: logger)
        let inherited = ListenFDs.inherited().unixStreamListener(path: nil)
        publisher = TrackStatePublisher(eventLoop: loop)
        status = StatusBoard(hub: hub)
        server = TrackStateServer(
            publisher: publisher, status: status, path: configuration.socket.path,
            maxClients: configuration.socket.maxClients, inheritedDescriptor: inherited,
            logger: logger, logLimiter: .shared)

        if let address = configuration.metrics.listen {
            metricsServer = MetricsServer(address: address, metrics: DaemonMetrics(), status: status)
        } else {
            metricsServer = nil
        }

        if configuration.mqtt.url != nil {
            do {
                mqtt = try MqttPublisher(settings: configuration.mqtt, eventLoop: loop, logger: logger)
            } catch {
                throw DaemonStartError(description: "\(error)")
            }
        } else {
            mqtt = nil
        }

        do {
            beacon = try BeaconOutput.make(
                configuration.beacon, stateDir: configuration.stateDir,
                followsRaceControl: configuration.remote.url != nil, keyring: keyring,
                companyID: scanner.companyID, timerLoop: loop, logger: logger)
        } catch let error as WakeSignal.Failure {
            throw DaemonStartError(description: "beacon: cannot make its wake signal: \(errnoText(error.errno))")
        } catch {
            throw DaemonStartError(description: "beacon: \(error)")
        }
        if let beacon, let mqtt { beacon.onStatusChange { mqtt.transmitterChanged($0) } }

        let decoder = GeoRacingDecoder(companyID: scanner.companyID)
        // The HCI scanners' kernel filter drops other devices' reports until a client looks at
        // them; a recording keeps everything.
        let filters = scanner.backend == .hci && scanner.kernelFilter && configuration.record.path == nil
        let devices = NearbyDeviceTable(demand: filters && replayClock == nil ? AllDevicesDemand() : nil)
        if let replayClock, let capture = scanner.replay {
            backend = ReplayBackend(
                path: capture, clock: replayClock, loop: scanner.loop,
                decoder: decoder, devices: devices, hub: hub, logger: logger)
        } else {
            backend = try ScannerSet.make(
                scanner, record: configuration.record, hub: hub, decoder: decoder, devices: devices, logger: logger,
                logLimiter: .shared)
        }

        if let url = configuration.remote.url {
            let httpGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            self.httpGroup = httpGroup
            let store = RemoteStateStore(stateDirectory: configuration.stateDir, logger: logger, logLimiter: .shared)
            do {
                poller = try RemoteStatePoller(
                    configuration: Self.pollerConfiguration(url: url, configuration.remote),
                    sink: HubRemoteSink(hub: hub, store: store), logger: logger, eventLoopGroup: httpGroup,
                    logLimiter: .shared)
            } catch {
                throw DaemonStartError(description: "remote: \(error)")
            }
            if let restoration = store.restoration(nowWallMicros: MonotonicClock.wallMicros()) {
                try loop.submit { [hub] in hub.restoreRemote(restoration) }.wait()
                logger.info(
                    """
                    restored the last known remote state, \(restoration.age / 1_000_000) s \
                    old\(restoration.isLatched ? ", evacuation latched" : "")
                    """
                )
            }
        } else {
            httpGroup = nil
            poller = nil
        }
        self.devices = devices
        connectOutputs(clock: clock)
    }

    /// The hub's outputs, in the order each event reaches them: the socket's clients first (the
    /// kiosks' line goes out before any other work), then MQTT, the beacon transmitter, systemd's
    /// status line, and the publish latency (recorded once the line went out to every client).
    /// Then the parts of a status reply beside the hub's (the socket server adds its own when it
    /// starts).
    private func connectOutputs(clock: any EngineClock) {
        var outputs: [any HubOutput] = [publisher]
        if let mqtt { outputs.append(mqtt) }
        if let beacon { outputs.append(beacon) }
        if notifier.isEnabled { outputs.append(SystemdStatusOutput(notifier: notifier, eventLoop: hub.eventLoop)) }
        if let metricsServer { outputs.append(metricsServer.metrics.publishLatencyOutput(clock: clock)) }
        hub.connect(outputs)
        let contributors: [(any StatusContributor)?] = [
            configInForce, keyStatus, mqtt?.outbox, backend as? any StatusContributor, poller, devices,
            beacon,
        ]
        for case let contributor? in contributors { status.add(contributor) }
    }

    static func pollerConfiguration(url: String, _ remote: DaemonConfiguration.Remote) -> RemotePollerConfiguration {
        RemotePollerConfiguration(
            url: url, pollInterval: .microseconds(remote.pollInterval), timeout: .microseconds(remote.timeout),
            staleAfter: .microseconds(remote.staleAfter), caFile: remote.caFile,
            bearerTokenFile: remote.bearerTokenFile)
    }

    /// Runs until SIGTERM or SIGINT, then shuts down: the sources stop, the hub publishes the last
    /// state, clients are told `bye`, the socket file is removed (unless systemd owns it).
    ///
    /// The hub starts and the server listens first (a socket in use stops the daemon before any
    /// source starts); then everything runs as one service group with SIGTERM and SIGINT as its
    /// graceful shutdown signals. The group stops its services in reverse order, so the order of
    /// `services` is the shutdown order read backwards: server, hub, then the sources.
    package func run() async throws {
        // Trap SIGHUP before anything listens, so an early one reloads instead of being lost.
        let reloadSignals = await UnixSignalsSequence(trapping: .sighup)
        let hub = hub
        let notifier = notifier
        let poller = poller
        let logger = logger
        try await hub.eventLoop.submit { hub.start() }.get()
        do {
            try await server.start().get()
            try await metricsServer?.start()
        } catch {
            try? await server.shutdown().get()
            await metricsServer?.shutdown()
            try? await hub.eventLoop.submit { hub.stop() }.get()
            try? await group.shutdownGracefully()
            try? await httpGroup?.shutdownGracefully()
            throw DaemonStartError(description: "\(error)")
        }
        let socketPath = configuration.socket.path
        logger.info(
            """
            beacond \(BeacondVersion.current) listening on \(socketPath), backend \
            \(configuration.scanner.backend.rawValue)\(configuration.remote.url.map { ", remote \($0)" } ?? "")
            """
        )
        if let metricsServer {
            logger.info("metrics at http://\(metricsServer.boundAddress)/metrics")
        }
        _ = notifier.ready(status: "listening on \(socketPath)")
        let server = TrackStateServerService(server: server, logger: logger)
        var services: [any Service] = [
            server, TrackStateHubService(hub: hub),
            ReloadService(daemon: self, signals: reloadSignals),
            LogSummaryService(limiter: .shared, logger: logger, eventLoop: hub.eventLoop),
        ]
        if let metricsServer { services.append(MetricsServerService(server: metricsServer)) }
        if let mqtt {
            do {
                try mqtt.start()
            } catch {
                logger.error("mqtt: cannot start: \(error); running without it")
            }
            // First in the group, so it stops last: after the hub published the final state.
            services.insert(MqttPublisherService(publisher: mqtt), at: 0)
        }
        if let interval = SystemdNotifier.watchdogInterval() {
            services.append(WatchdogService(hub: hub, notifier: notifier, interval: interval))
        }
        // Before the sources, so it stops after them: advertising is disabled once nothing new comes.
        if let beacon { services.append(beacon) }
        // Likewise: the last marks are saved once no frame can move them.
        services.append(markService)
        if let poller { services.append(poller) }
        if let backend { services.append(backend) }
        // Last, so the first to hear of a graceful shutdown: systemd learns of the stop at once.
        let stopping = SystemdStoppingService(notifier: notifier)
        services.append(stopping)
        let serviceGroup = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))

        var failure: Error?
        do {
            try await serviceGroup.run()
        } catch {
            failure = error
            logger.error("stopping after an error: \(error)")
        }
        // A stop for an error never started a graceful shutdown: STOPPING=1 goes now.
        stopping.sendOnce()
        try? await group.shutdownGracefully()
        try? await httpGroup?.shutdownGracefully()
        logger.info("beacond stopped")
        if let failure { throw failure }
    }

    /// SIGHUP: reloads the configuration file. Fusion and remote settings, zone names and the log
    /// level apply at once without dropping clients; the rest is logged as needing a restart. A bad file
    /// keeps the running configuration (and `status.config` its digest, with the refusal).
    fileprivate func reload() async {
        let plan: ReloadPlan
        do throws(ConfigurationError) {
            plan = try DaemonConfiguration.reload(path: configurationPath, overrides: overrides, current: configuration)
        } catch {
            configInForce.refused(error)
            logger.error("reload failed, keeping the running configuration: \(error)")
            return
        }
        await reloadVerification(plan.configuration.security)
        guard let summary = plan.summary else {
            configInForce.applied(plan.file)
            logger.info("reload: nothing changed")
            return
        }
        configuration = plan.configuration
        if plan.logLevelChanged { levelControl.level = configuration.log.level }
        let zoneNames = configuration.zones.names
        if plan.fusionChanged {
            let fusion = configuration.fusionConfiguration()
            let names = plan.zoneNamesChanged ? zoneNames : nil
            try? await hub.eventLoop.submit { [hub] in hub.reconfigure(fusion, zoneNames: names) }.get()
        } else if plan.zoneNamesChanged {
            try? await hub.eventLoop.submit { [hub] in hub.reconfigure(zoneNames: zoneNames) }.get()
        }
        if plan.remoteChanged {
            if let poller, let url = configuration.remote.url {
                do {
                    try poller.update(Self.pollerConfiguration(url: url, configuration.remote))
                } catch {
                    logger.error("reload: remote settings rejected, keeping the running ones: \(error)")
                }
            } else {
                logger.warning("reload: starting or stopping the remote poller needs a restart")
            }
        }
        // Once the hub runs with it: a status never names a file before its settings are in force.
        configInForce.applied(plan.file)
        logger.info("config reloaded: \(summary)")
    }

    /// SIGHUP reloads, until a graceful shutdown.
    private struct ReloadService: Service {
        let daemon: Daemon
        let signals: UnixSignalsSequence

        func run() async throws {
            await cancelWhenGracefulShutdown {
                for await _ in signals {
                    _ = daemon.notifier.reloading()
                    await daemon.reload()
                    _ = daemon.notifier.ready()
                }
            }
        }
    }

    /// `WATCHDOG=1` every half watchdog period, sent only after a round trip through the hub's
    /// event loop, so a stalled loop stops the pings and systemd restarts the daemon.
    private struct WatchdogService: Service {
        let hub: TrackStateHub
        let notifier: SystemdNotifier
        let interval: Int64

        func run() async throws {
            do {
                try await cancelWhenGracefulShutdown {
                    while !Task.isCancelled {
                        try await hub.eventLoop.submit {}.get()
                        _ = notifier.watchdog()
                        try await hub.eventLoop.wait(for: .microseconds(interval))
                    }
                }
            } catch is CancellationError {
                // Shutdown.
            }
        }
    }
}

/// Its mutable state (`configuration`) is only touched by the reload service, one signal at a time.
// @unchecked Sendable: `configuration` is changed only by the reload service, one signal at a time.
extension Daemon: @unchecked Sendable {}
