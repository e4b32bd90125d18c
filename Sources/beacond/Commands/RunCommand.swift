import BeacondCore
import ArgumentParser
import Logging

struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run the daemon: scan beacons, poll race control, publish the track mode on a Unix socket.",
        discussion: """
            Settings come from the config file (--config, default /etc/beacond/beacond.yaml when it \
            exists; see docs/configuration.md); each flag overrides its key. SIGTERM or SIGINT shut \
            down gracefully; SIGHUP reloads the config file (fusion and remote settings, log level). \
            The default backend is hci: a kiosk with no config never shows demo data. For demos and \
            tests, --backend replay --replay CAPTURE feeds a capture through the live pipeline on a \
            virtual clock (--speed X or max, --loop).
            """
    )

    @Option(help: ArgumentHelp("Config file (YAML).", valueName: "file"))
    var config: String?

    @OptionGroup(title: "Scanner")
    var scanner: ScannerOptions

    @Option(help: ArgumentHelp("Capture for --backend replay (scanner.replay).", valueName: "file"))
    var replay: String?

    @Option(help: ArgumentHelp("Replay speed: a factor of real time, or max (scanner.speed).", valueName: "x|max"))
    var speed: String?

    @Flag(help: "Replay the capture again and again (scanner.loop).")
    var loop = false

    @Option(name: .customLong("remote-url"),
            help: ArgumentHelp("Venue API state URL: http://, https:// or file:// (remote.url).", valueName: "url"))
    var remoteURL: String?

    @Option(name: .customLong("poll-interval"), help: ArgumentHelp("Seconds between polls (remote.poll_interval).", valueName: "s"))
    var pollInterval: String?

    @Option(help: ArgumentHelp("Seconds a poll may take (remote.timeout).", valueName: "s"))
    var timeout: String?

    @Option(name: .customLong("stale-after"),
            help: ArgumentHelp("Seconds a fetched state stays fresh (remote.stale_after).", valueName: "s"))
    var staleAfter: String?

    @Option(help: ArgumentHelp("safety, beacon-first or most-severe (fusion.policy).", valueName: "policy"))
    var policy: String?

    @Option(name: .customLong("min-rssi"), parsing: .unconditional,
            help: ArgumentHelp("Ignore overrides weaker than this, dBm (fusion.min_rssi).", valueName: "dbm"))
    var minRSSI: String?

    @Option(help: ArgumentHelp("Zones whose beacons may override, comma-separated (fusion.zones).", valueName: "list"))
    var zones: String?

    @Option(name: .customLong("deescalation-hold"),
            help: ArgumentHelp("Seconds a lowered or cleared beacon claim stays in force (fusion.deescalation_hold).",
                               valueName: "s"))
    var deescalationHold: String?

    @Option(help: ArgumentHelp("Unix socket path (socket.path).", valueName: "path"))
    var socket: String?

    @Option(name: .customLong("state-dir"), help: ArgumentHelp("Where the last remote state is kept (state_dir).", valueName: "dir"))
    var stateDir: String?

    @Option(name: .customLong("log-level"),
            help: ArgumentHelp("trace, debug, info, notice, warning, error or critical (log.level).", valueName: "level"))
    var logLevel: String?

    func run() async throws {
        let overrides = scanner.applied(to: DaemonOverrides(
            replay: replay, speed: speed, loop: loop ? true : nil, remoteURL: remoteURL, pollInterval: pollInterval,
            timeout: timeout, staleAfter: staleAfter, policy: policy, minRSSI: minRSSI, zones: zones, socket: socket,
            stateDir: stateDir, logLevel: logLevel, deescalationHold: deescalationHold))
        let path = config ?? DaemonConfiguration.defaultPathIfPresent()
        let configuration: DaemonConfiguration
        do throws(ConfigurationError) {
            configuration = try DaemonConfiguration.load(path: path, overrides: overrides)
        } catch {
            printError("beacond run: \(error)")
            throw ExitCode(error.exitCode)
        }
        let levelControl = DaemonLogging.bootstrap(level: configuration.log.level)
        let logger = Logger(label: "beacond")
        do {
            let daemon = try Daemon(configuration: configuration, configurationPath: path, overrides: overrides,
                                    levelControl: levelControl, logger: logger)
            try await daemon.run()
        } catch {
            printError("beacond run: \(error)")
            throw ExitCode(1)
        }
    }
}
