import ArgumentParser
import BeacondClient
import BeacondCore
import Foundation

extension TerminalCapabilities.Choice: ExpressibleByArgument {}

struct KioskCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "kiosk",
        abstract: "Show the track flag full-screen in this terminal, readable across a room.",
        discussion: """
            Fills the terminal with the flag colour and draws the mode in large letters: GREEN, \
            YELLOW, VSC, SC (amber), RED FLAG, EVACUATE (flashing red and white, about 1 Hz) or \
            NO SIGNAL (grey). Below it: the zone, the source, race control's message and the age \
            of the information; a stale race-control state says STALE. The bottom line repeats \
            the mode as plain text for screen readers and capture tools.

            When the daemon goes away the kiosk shows "NO SIGNAL — daemon unreachable" and \
            reconnects (at most 2 s apart); it never exits on its own. SIGTERM, SIGINT (Ctrl-C) \
            and SIGHUP restore the terminal and exit 0. Colours follow the terminal: 24-bit with \
            COLORTERM=truecolor, the 256-colour palette with a TERM containing 256color, else the \
            8 basic colours (a Linux console, where amber and yellow look alike and the letters \
            tell them apart). NO_COLOR or TERM=dumb draw text only.

            --once prints one frame of the state now as plain text and exits: at the terminal's \
            size, else COLUMNS x LINES from the environment, else 80x24. It exits 1 (after \
            printing the NO SIGNAL frame) when no daemon answers.

            Languages and the evacuation exit come from the kiosk.* keys of --config (default \
            /etc/beacond/beacond.yaml when it exists; the daemon's keys in it are accepted and not \
            read): kiosk.languages cycles the words through several languages, each for \
            kiosk.language_period; kiosk.exit.direction, kiosk.exit.name and kiosk.exit.distance_m \
            draw an arrow to the exit during an evacuation. A bad kiosk key exits 78. See \
            \(DocumentationPath.named("kiosk.md")).
            """
    )

    @Option(help: ArgumentHelp("The daemon's socket.", valueName: "path"))
    var socket = TrackStateClient.defaultPath

    @Option(
        help: ArgumentHelp(
            "Config file (YAML) whose kiosk.* keys set the languages and the exit "
                + "(default: /etc/beacond/beacond.yaml when it exists).",
            valueName: "file"))
    var config: String?

    @Flag(help: "Do not flash the evacuation flag (it stays red).")
    var steady = false

    @Flag(help: "Print one frame of the state now as plain text, and exit (1 when no daemon answers).")
    var once = false

    @Flag(help: "Announce every change of flag aloud in each language, with espeak-ng and aplay (kiosk.speak).")
    var speak = false

    @Option(
        name: .customLong("speak-to"),
        help: ArgumentHelp(
            "Speak into this folder instead of a sound card: each announcement as a WAV file, its words "
                + "beside it as text (the folder is created if missing).",
            valueName: "dir"))
    var speakTo: String?

    @Option(
        help: ArgumentHelp(
            "Colours: auto (from COLORTERM, TERM and NO_COLOR), truecolor, 256, 16 or none (text only).",
            valueName: "colors"))
    var colors = TerminalCapabilities.Choice.auto

    /// `--web ADDR:PORT` and `--web-allow-remote`: the browser kiosk instead of the terminal.
    /// `main` blocks SIGTERM, SIGINT, SIGHUP and SIGWINCH for every `kiosk` command line
    /// (`DaemonSignals.kioskHandled`); both kiosks read their quit signals with `UnixSignalsSequence`.
    @OptionGroup var web: WebKioskOptions

    func run() async throws {
        let (settings, presentation) = try loadSettings()
        let voice = once ? nil : try startVoice(settings, presentation)
        defer { voice?.stop() }
        if web.web != nil {
            try await web.runWebKiosk(socket: socket, steady: steady, presentation: presentation, voice: voice)
            return
        }
        if once {
            let size = TerminalKiosk.snapshotSize(
                output: STDOUT_FILENO, environment: ProcessInfo.processInfo.environment)
            let frame = TerminalKiosk.snapshot(
                socket: socket, columns: size.columns, rows: size.rows, presentation: presentation)
            FileHandle.standardOutput.write(Data(frame.rows.map { $0 + "\n" }.joined().utf8))
            if !frame.answered { throw ExitCode(1) }
            return
        }
        let capabilities = TerminalCapabilities.detect(environment: ProcessInfo.processInfo.environment, choice: colors)
        let ending = await TerminalKiosk.run(
            .init(
                socket: socket, steady: steady, capabilities: capabilities, presentation: presentation, voice: voice))
        switch ending {
        case .signal:
            return
        case .terminal, .feed:
            FileHandle.standardError.write(Data("beacond kiosk: error: \(ending)\n".utf8))
            throw ExitCode(1)
        }
    }

    /// The voice, when `--speak`, `--speak-to` or `kiosk.speak` asks for one. A `--speak-to` folder
    /// that cannot be created exits 1; any other failure to set the voice up is one log line and a
    /// silent kiosk, never a kiosk that does not start.
    func startVoice(_ settings: KioskSettings, _ presentation: KioskPresentation) throws -> KioskVoice? {
        let output: KioskSpeaker.Output
        if let speakTo {
            output = .directory(speakTo)
        } else if speak || settings.speak {
            output = .device(settings.audioDevice)
        } else {
            return nil
        }
        do {
            let speaker = try KioskSpeaker(
                configuration: .init(output: output, repeatEvery: settings.speakRepeat),
                log: { line in FileHandle.standardError.write(Data("beacond kiosk: \(line)\n".utf8)) })
            try speaker.start()
            return KioskVoice(speaker: speaker, presentation: presentation)
        } catch let error as KioskSpeaker.SetupError {
            guard case .folder = error else {
                FileHandle.standardError.write(Data("beacond kiosk: voice: \(error); the kiosk stays silent\n".utf8))
                return nil
            }
            FileHandle.standardError.write(Data("beacond kiosk: error: --speak-to \(error)\n".utf8))
            throw ExitCode(1)
        } catch {
            FileHandle.standardError.write(Data("beacond kiosk: voice: \(error); the kiosk stays silent\n".utf8))
            return nil
        }
    }

    /// The `kiosk.*` settings of the config file and the catalogues they name. A bad key exits 78;
    /// a problem in a catalogue is reported on stderr and costs only what it touches.
    func loadSettings() throws -> (KioskSettings, KioskPresentation) {
        var settings = KioskSettings()
        if let path = config ?? DaemonConfiguration.defaultPathIfPresent() {
            do throws(ConfigurationError) {
                settings = try KioskSettings.load(path: path)
            } catch {
                FileHandle.standardError.write(Data("beacond kiosk: \(error)\n".utf8))
                throw ExitCode(error.exitCode)
            }
        }
        let loaded = KioskCatalogueFiles.load(
            languages: settings.languages,
            directories: [KioskCatalogueFiles.shippedDirectory(), settings.languageDir])
        for problem in loaded.problems {
            FileHandle.standardError.write(Data("beacond kiosk: language catalogue: \(problem)\n".utf8))
        }
        let presentation = KioskPresentation(
            catalogues: loaded.catalogues, period: settings.languagePeriod, exit: settings.exit,
            speakRepeat: settings.speakRepeat)
        return (settings, presentation)
    }
}
