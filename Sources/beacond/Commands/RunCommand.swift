import ArgumentParser
import BeacondCore
import Logging

struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run the daemon: scan beacons, poll race control, publish the track mode on a Unix socket.",
        discussion: """
            Settings come from the config file (--config, default /etc/beacond/beacond.yaml when it \
            exists; see CONFIGURATION in man beacond, and \(DocumentationPath.named("configuration.md"))); \
            each flag overrides its key. SIGTERM or SIGINT shut down gracefully; SIGHUP reloads the \
            config file (fusion and remote settings, log level). \
            The default backend is hci: a kiosk with no config never shows demo data. For demos and \
            tests, --backend replay --replay CAPTURE feeds a capture through the live pipeline on a \
            virtual clock (--speed X or max, --loop).
            """
    )

    @Option(help: ArgumentHelp("Config file (YAML).", valueName: "file"))
    var config: String?

    @OptionGroup(title: "Scanner")
    var scanner: ScannerOptions

    @Option(key: .scannerReplay, help: "Capture for --backend replay", valueName: "file")
    var replay: ConfigFlag?

    @Option(key: .scannerSpeed, help: "Replay speed: a factor of real time, or max", valueName: "x|max")
    var speed: ConfigFlag?

    @Flag(key: .scannerLoop, help: "Replay the capture again and again")
    var loop = false

    @Option(key: .remoteURL, help: "Venue API state URL: http://, https:// or file://", valueName: "url")
    var remoteURL: ConfigFlag?

    @Option(key: .remotePollInterval, help: "Seconds between polls", valueName: "s")
    var pollInterval: ConfigFlag?

    @Option(key: .remoteTimeout, help: "Seconds a poll may take", valueName: "s")
    var timeout: ConfigFlag?

    @Option(key: .remoteStaleAfter, help: "Seconds a fetched state stays fresh", valueName: "s")
    var staleAfter: ConfigFlag?

    @Option(key: .fusionPolicy, help: "safety, beacon-first or most-severe", valueName: "policy")
    var policy: ConfigFlag?

    @Option(
        key: .fusionMinRSSI, parsing: .unconditional, help: "Ignore overrides weaker than this, dBm",
        valueName: "dbm")
    var minRSSI: ConfigFlag?

    @Option(key: .fusionZones, help: "Zones whose beacons may override, comma-separated", valueName: "list")
    var zones: ConfigFlag?

    @Option(
        key: .fusionDeescalationHold, help: "Seconds a lowered or cleared beacon claim stays in force",
        valueName: "s")
    var deescalationHold: ConfigFlag?

    @Option(key: .socketPath, help: "Unix socket path", valueName: "path")
    var socket: ConfigFlag?

    @Option(key: .stateDir, help: "Where the last remote state is kept", valueName: "dir")
    var stateDir: ConfigFlag?

    @Option(key: .logLevel, help: "trace, debug, info, notice, warning, error or critical", valueName: "level")
    var logLevel: ConfigFlag?

    @Option(
        key: .metricsListen, help: "Serve Prometheus metrics at http://ADDR:PORT/metrics (off by default)",
        valueName: "addr:port")
    var metrics: ConfigFlag?

    @Option(key: .mqttURL, help: "Publish to an MQTT broker: mqtt://host:1883 or mqtts://host:8883", valueName: "url")
    var mqttURL: ConfigFlag?

    @Option(key: .mqttNode, help: "This node's MQTT topic level (default: the host name)", valueName: "name")
    var mqttNode: ConfigFlag?

    @Option(
        key: .securityKeyFile, help: "Venue keys that verify signed v3 frames (beacond keys new)", valueName: "file")
    var keyFile: ConfigFlag?

    @Option(key: .securityUnsigned, help: "What unsigned frames count for: accept or reject", valueName: "policy")
    var unsigned: ConfigFlag?

    @Option(key: .securityClockWindow, help: "Seconds a v3 frame's clock may differ from this one's", valueName: "s")
    var clockWindow: ConfigFlag?

    /// The flags given, as overrides of their config keys.
    var overrides: DaemonOverrides {
        DaemonOverrides(
            scanner.flags + [
                replay, speed, .switched(.scannerLoop, loop), remoteURL, pollInterval, timeout, staleAfter, policy,
                minRSSI, zones, deescalationHold, socket, stateDir, logLevel, metrics, mqttURL, mqttNode, keyFile,
                unsigned, clockWindow,
            ])
    }

    func run() async throws {
        let overrides = self.overrides
        let path = config ?? DaemonConfiguration.defaultPathIfPresent()
        let loaded: LoadedConfiguration
        do throws(ConfigurationError) {
            loaded = try DaemonConfiguration.loadIdentified(path: path, overrides: overrides)
        } catch {
            printError("beacond run: \(error)")
            throw ExitCode(error.exitCode)
        }
        let configuration = loaded.configuration
        let keyring = try loadVenueKeys(configuration.security.keyFile, command: "run")
        let levelControl = DaemonLogging.bootstrap(level: configuration.log.level)
        let logger = Logger(label: "beacond")
        do {
            let daemon = try Daemon(
                configuration: configuration, configurationPath: path, configurationFile: loaded.file,
                overrides: overrides, keyring: keyring, levelControl: levelControl, logger: logger)
            try await daemon.run()
        } catch {
            printError("beacond run: \(error)")
            throw ExitCode(1)
        }
    }
}
