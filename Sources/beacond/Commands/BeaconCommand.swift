import ArgumentParser
import BeacondCore
import CircuitState
import Logging

extension BeaconBackend: ExpressibleByArgument {}

extension BeaconFrameVersion: ExpressibleByArgument {
    public init?(argument: String) { self.init(text: argument) }
}

struct BeaconCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "beacon",
        abstract: "Advertise the track mode as a GeoRacing beacon, as the venue's signage screens do.",
        discussion: """
            Makes this machine a GeoRacing circuit beacon for one zone: a v1 frame on company id \
            0x1234, bit-compatible with GeoRacing's Windows beacon (docs/beacon.md), or a signed v3 \
            frame (--frame-version v3 or both, --key-file; docs/security.md). It advertises \
            only a hand-set mode (--mode, --mode-file) or race control's state, polled itself \
            (--remote-url) or as a daemon follows it (--socket), and only while that state is \
            fresh; never what was heard over Bluetooth. Without a fresh mode it advertises nothing \
            and says why. Its state goes to stderr, one line per change. SIGHUP re-reads \
            --mode-file; SIGTERM or SIGINT stops advertising and exits. The hci backend needs \
            CAP_NET_RAW; the bluez backend needs bluetoothd and its D-Bus policy's permission. \
            Either may share the adapter with `beacond run`'s scanner.
            """
    )

    @Option(
        help: ArgumentHelp(
            "The radio: hci (raw HCI, CAP_NET_RAW) or bluez (through bluetoothd).", valueName: "backend"))
    var backend = BeaconBackend.hci

    @Option(help: ArgumentHelp("The adapter to advertise on.", valueName: "hciN"))
    var adapter = "hci0"

    @Option(help: ArgumentHelp("The zone this beacon stands for, 0 to 65535.", valueName: "zone"))
    var zone: UInt16

    @Option(help: ArgumentHelp("A hand-set mode: normal, yellow_flag, vsc, safety_car, red_flag or evacuation."))
    var mode: String?

    @Option(help: ArgumentHelp("A file whose first line is the hand-set mode; SIGHUP re-reads it.", valueName: "file"))
    var modeFile: String?

    @Option(help: ArgumentHelp("Follow race control: its GET /api/state URL.", valueName: "url"))
    var remoteURL: String?

    @Option(help: ArgumentHelp("PEM certificates trusted for --remote-url instead of the system's.", valueName: "file"))
    var caFile: String?

    @Option(
        help: ArgumentHelp("Seconds race control's last fetch stays fresh (--remote-url).", valueName: "seconds"),
        transform: SecondsArgument.parser(.staleAfter))
    var staleAfter = SecondsArgument(micros: 15_000_000)

    @Option(help: ArgumentHelp("Follow the race-control state of the daemon on this socket.", valueName: "path"))
    var socket: String?

    @Option(
        help: ArgumentHelp("Where the frame sequence is kept across restarts; created if missing.", valueName: "dir"))
    var stateDir: String?

    @Option(
        help: ArgumentHelp("Advertising interval in seconds, 0.02 to 10.24.", valueName: "seconds"),
        transform: SecondsArgument.parser(.beaconInterval))
    var interval = SecondsArgument(micros: 100_000)

    @Option(
        help: ArgumentHelp(
            "The GeoRacing frames to send: v1, v3 (signed; needs --key-file) or both in turn.", valueName: "version"))
    var frameVersion = BeaconFrameVersion.v1

    @Option(help: ArgumentHelp("Venue keys that sign v3 frames (beacond keys new).", valueName: "file"))
    var keyFile: String?

    @Option(help: ArgumentHelp("This transmitter's id in v3 frames (default: the zone).", valueName: "id"))
    var sourceID: UInt16?

    @Option(help: ArgumentHelp("POST GeoRacing's beacon heartbeat here every 10 s.", valueName: "url"))
    var heartbeatURL: String?

    @Option(help: ArgumentHelp("PEM certificates trusted for --heartbeat-url.", valueName: "file"))
    var heartbeatCAFile: String?

    @Option(help: ArgumentHelp("The heartbeat's beacon_uid (default: beacond-HOSTNAME).", valueName: "id"))
    var uid: String?

    @Option(
        name: .customLong("log-level"),
        help: ArgumentHelp("trace, debug, info, notice, warning, error or critical.", valueName: "level"))
    var logLevel = "info"

    func validate() throws {
        if frameVersion.signs && keyFile == nil {
            throw ValidationError("--frame-version \(frameVersion.rawValue) signs frames: give --key-file")
        }
        let sources = [mode != nil || modeFile != nil, remoteURL != nil, socket != nil].filter { $0 }.count
        guard sources == 1 else {
            throw ValidationError("give one source: --mode or --mode-file, --remote-url, or --socket")
        }
        if let mode, TrackMode(remoteName: mode) == nil { throw ValidationError("--mode \(mode) is not a mode") }
    }

    func run() async throws {
        guard let level = Logger.Level(rawValue: logLevel) else { throw ValidationError("--log-level \(logLevel)") }
        _ = DaemonLogging.bootstrap(level: level)
        let logger = Logger(label: "beacond-beacon")
        let directory = stateDir ?? DaemonConfiguration.defaultStateDir
        var kept: String? = directory
        do {
            try FileOutput.makeDirectory(directory)
        } catch {
            // The default need not be writable on a marshal's laptop; a chosen directory must be.
            guard stateDir == nil else {
                printError("beacond beacon: --state-dir \(directory): \(error)")
                throw ExitCode(1)
            }
            logger.warning("beacon: \(error); the sequence is kept in memory only")
            kept = nil
        }
        let source: StandaloneBeacon.Source =
            if let remoteURL {
                .remote(
                    url: remoteURL, caFile: caFile, pollInterval: .milliseconds(300),
                    staleAfter: .microseconds(staleAfter.micros))
            } else if let socket {
                .socket(socket)
            } else {
                .handSet(mode.flatMap { TrackMode(remoteName: $0) }, modeFile: modeFile)
            }
        var transmitter = BeaconTransmitter.Configuration(
            zone: zone, backend: backend.rawValue, adapter: adapter, stateDir: kept)
        transmitter.frameVersion = frameVersion
        transmitter.signer = try loadVenueKeys(keyFile, command: "beacon").map {
            BeaconSigner(keyring: $0, sourceID: sourceID ?? zone)
        }
        let radio = BeaconRadio(backend: backend, adapter: adapter, interval: interval.micros)
        let heartbeat = heartbeatURL.map { url in
            BeaconHeartbeat.Configuration(
                url: url, caFile: heartbeatCAFile, uid: uid ?? BeaconHeartbeat.defaultUID(), hasScreen: false)
        }
        let status = await StandaloneBeacon.run(
            transmitter: transmitter, radio: radio,
            source: source, heartbeat: heartbeat, logger: logger)
        if status != 0 { throw ExitCode(status) }
    }
}
