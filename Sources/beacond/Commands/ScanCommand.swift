import ArgumentParser
import BLEPayload
import BeacondCore
import Logging
import NIOPosix
import ServiceLifecycle
import UnixSignals

#if canImport(Glibc)
import Glibc
#endif

struct ScanCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scan",
        abstract: "Print the advertising reports the air holds now, live, in replay's format.",
        discussion: """
            The staff tool for checking what a venue's radios hear. Scans with the hci backend \
            (raw HCI: needs CAP_NET_RAW, and bluetoothd not scanning the same adapter) or the \
            bluez backend (bluetoothd over D-Bus), and prints one line per \
            GeoRacing signal (or, with --all, per report), exactly as `beacond replay` prints a \
            capture. Scanner settings come from the config file when it exists, then the flags. \
            Stops on SIGINT or SIGTERM, after --duration, or when stdout's reader goes away, and \
            prints a summary on stderr. --record FILE (hci only) keeps what the controller sent \
            as btsnoop, readable by `beacond replay`, btmon and Wireshark.
            """
    )

    @Option(help: ArgumentHelp("Config file (YAML); only its scanner and record keys are used.", valueName: "file"))
    var config: String?

    @OptionGroup(title: "Scanner")
    var scanner: ScannerOptions

    @Flag(help: "Print every advertising report, not only GeoRacing signals.")
    var all = false

    @Flag(help: "Print one JSON object per line (see \(DocumentationPath.named("replay-json.md"))).")
    var json = false

    @Option(
        help: ArgumentHelp("Stop after this many seconds, 0.001 to 2678400 (31 days).", valueName: "seconds"),
        transform: SecondsArgument.parser(.scanDuration))
    var duration: SecondsArgument?

    @Option(
        name: .customLong("log-level"),
        help: ArgumentHelp("trace, debug, info, notice, warning, error or critical.", valueName: "level"))
    var logLevel: String?

    func validate() throws {
        if scanner.backend?.text == ScannerBackend.replay.rawValue {
            throw ValidationError("scan listens with hci or bluez; to read a capture use `beacond replay CAPTURE`")
        }
    }

    func run() async throws {
        let path = config ?? DaemonConfiguration.defaultPathIfPresent()
        var settings: DaemonConfiguration
        do throws(ConfigurationError) {
            settings = try DaemonConfiguration.load(
                path: path, overrides: DaemonOverrides([ConfigFlag(.logLevel, logLevel ?? "warning")] + scanner.flags))
        } catch {
            printError("beacond scan: \(error)")
            throw ExitCode(error.exitCode)
        }
        guard settings.scanner.backend != .replay else {
            printError(
                "beacond scan: the config file says scanner.backend: replay; scan listens with hci or bluez "
                    + "(--backend hci|bluez)")
            throw ExitCode(64)
        }
        // A config file's remote and socket settings are not this tool's business.
        settings.remote = DaemonConfiguration.Remote()
        _ = DaemonLogging.bootstrap(level: settings.log.level)
        let logger = Logger(label: "beacond-scan")

        let output = OutputStream(fd: STDOUT_FILENO)
        let formatter = ReportFormatter(decoder: GeoRacingDecoder(companyID: settings.scanner.companyID))
        let printer = ScanPrinter(ReportPrinter(formatter: formatter, all: all, json: json, output: output))
        let names = settings.scanner.adapters.names
        guard !names.isEmpty else {
            printError(
                "beacond scan: scanner.adapter: auto is for the daemon; name the adapters to scan (--adapter hciN)")
            throw ExitCode(64)
        }
        var backends: [any Service] = []
        for name in names {
            let sink = PrintingAdvertisementSink(printer: printer, adapter: names.count > 1 ? name : nil)
            do {
                backends.append(
                    try LiveScanner.make(
                        settings.scanner, adapter: name, record: settings.record, sink: sink,
                        retriesMissingAdapter: false, logger: logger))
            } catch {
                printError("beacond scan: \(error)")
                throw ExitCode(1)
            }
        }

        let started = MonotonicClock.micros()
        let signals = await UnixSignalsSequence(trapping: .sigterm, .sigint)
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(services: backends, logger: logger))
        let deadline = duration.map { started + $0.micros }
        let stopper = Task {
            await withTaskGroup(of: Void.self) { tasks in
                tasks.addTask {
                    for await _ in signals { return }
                }
                tasks.addTask {
                    for await _ in printer.readerGoneEvents {}
                }
                if let deadline {
                    tasks.addTask {
                        let loop = MultiThreadedEventLoopGroup.singleton.next()
                        try? await loop.wait(for: .microseconds(deadline - MonotonicClock.micros()))
                    }
                }
                await tasks.next()
                tasks.cancelAll()
            }
            await group.triggerGracefulShutdown()
        }
        defer { stopper.cancel() }

        var failure: Error?
        do {
            try await group.run()
        } catch {
            failure = error
        }
        output.flush()
        printError(printer.summary(elapsedMicros: MonotonicClock.micros() - started))
        if let failure {
            printError("beacond scan: \(failure)")
            throw ExitCode(1)
        }
    }
}
