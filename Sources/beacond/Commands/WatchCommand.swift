import ArgumentParser
import BeacondClient
import BeacondCore
import Foundation

#if canImport(Glibc)
import Glibc
#endif

extension WatchSort: ExpressibleByArgument {}

struct WatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Show the GeoRacing beacons on the air in a live table, for staff (like top).",
        discussion: """
            Redraws about 4 times a second: the fused state, race control's health (fresh or \
            STALE, with its age), the scanner's, the clients connected and the rejected-frame \
            counters, then one row per beacon heard: key (zone or source id), address, mode in \
            its flag's colour, RSSI with a bar, distance, sequence, TTL left, last seen, and \
            "contested" where two claims compete. Keys: s cycles the sort (key, rssi, last-seen, \
            mode), q quits; SIGTERM, SIGINT (Ctrl-C) and SIGHUP restore the terminal and exit 0. \
            With --all, the devices that are not GeoRacing beacons are listed too, strongest \
            first (the daemon keeps the 64 strongest heard in the last 10 s).

            Without a terminal on stdout, or with --once, prints one plain snapshot and exits \
            (1 when no daemon answers). With --replay FILE, runs the daemon's pipeline in this \
            process on a capture at --speed (default 1, or max with --once), so staff can review \
            a recorded session; --config applies a config file's fusion settings and zone names \
            (default /etc/beacond/beacond.yaml when it exists). Race control is not polled in a \
            replay. A --once snapshot of a replay is taken when the capture has played to its end.
            """
    )

    @Option(help: ArgumentHelp("The daemon's socket.", valueName: "path"))
    var socket = TrackStateClient.defaultPath

    @Option(help: ArgumentHelp("Replay this capture in-process instead of asking a daemon.", valueName: "file"))
    var replay: String?

    @Option(
        help: ArgumentHelp("Replay speed: a factor of real time, or max (with --replay).", valueName: "x|max"),
        transform: ConfigFlag.checked(.scannerSpeed))
    var speed: ConfigFlag?

    @Option(help: ArgumentHelp("Config file for the replay's fusion settings and zone names.", valueName: "file"))
    var config: String?

    @Flag(help: "Also list the devices that are not GeoRacing beacons, strongest first.")
    var all = false

    @Flag(help: "Print one plain snapshot and exit (also the default without a terminal).")
    var once = false

    @Option(help: ArgumentHelp("The first sort: key, rssi, last-seen or mode.", valueName: "order"))
    var sort = WatchSort.key

    @Option(
        help: ArgumentHelp(
            "Colours: auto (from COLORTERM, TERM and NO_COLOR), truecolor, 256, 16 or none.", valueName: "colors"))
    var colors = TerminalCapabilities.Choice.auto

    func validate() throws {
        if replay == nil, speed != nil { throw ValidationError("--speed needs --replay FILE") }
        if replay == nil, config != nil {
            throw ValidationError("--config needs --replay FILE (a running daemon has its own configuration)")
        }
    }

    func run() async throws {
        let interactive = !once && isatty(STDOUT_FILENO) == 1
        var session: WatchReplay?
        let source: any WatchSource
        if let replay {
            let replaySession = try await startReplay(replay, interactive: interactive)
            session = replaySession
            source = replaySession
        } else {
            source = DaemonWatchSource(path: socket, timeout: interactive ? 2 : 5)
        }
        if interactive {
            let capabilities = TerminalCapabilities.detect(
                environment: ProcessInfo.processInfo.environment, choice: colors)
            let ending = await WatchLoop.run(
                source: source, options: .init(capabilities: capabilities, showsDevices: all, sort: sort))
            await session?.stop()
            switch ending {
            case .quit, .signal:
                return
            case .terminal, .thread:
                printError("beacond watch: error: \(ending)")
                throw ExitCode(1)
            }
        }
        let outcome = await WatchOnce.run(source: source, replay: session, showsDevices: all, sort: sort)
        await session?.stop()
        switch outcome {
        case .snapshot(let text, let failure):
            print(text, terminator: "")
            if let failure {
                printError("beacond watch: error: the replay stopped early: \(failure)")
                throw ExitCode(1)
            }
        case .failed(let reason):
            printError("beacond watch: error: \(reason)")
            throw ExitCode(1)
        case .signal(let number):
            printError("beacond watch: stopped by signal \(number) before the snapshot")
            throw ExitCode(1)
        }
    }

    /// Loads the configuration for the replay (flags on top: exit 64 or 78 when bad) and starts
    /// it; a capture that cannot be opened exits 1.
    private func startReplay(_ capture: String, interactive: Bool) async throws -> WatchReplay {
        let overrides = DaemonOverrides([
            ConfigFlag(.scannerBackend, "replay"), ConfigFlag(.scannerReplay, capture),
            speed ?? ConfigFlag(.scannerSpeed, interactive ? "1" : "max"),
        ])
        let configuration: DaemonConfiguration
        do throws(ConfigurationError) {
            configuration = try DaemonConfiguration.load(
                path: config ?? DaemonConfiguration.defaultPathIfPresent(), overrides: overrides)
        } catch {
            printError("beacond watch: \(error)")
            throw ExitCode(error.exitCode)
        }
        let session: WatchReplay
        do throws(WatchSourceError) {
            session = try WatchReplay(configuration: configuration)
        } catch {
            printError("beacond watch: error: \(error)")
            throw ExitCode(1)
        }
        await session.start()
        return session
    }
}
