import ArgumentParser
import BeacondClient
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
            printing the NO SIGNAL frame) when no daemon answers. See \(DocumentationPath.named("kiosk.md")).
            """
    )

    @Option(help: ArgumentHelp("The daemon's socket.", valueName: "path"))
    var socket = TrackStateClient.defaultPath

    @Flag(help: "Do not flash the evacuation flag (it stays red).")
    var steady = false

    @Flag(help: "Print one frame of the state now as plain text, and exit (1 when no daemon answers).")
    var once = false

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
        if web.web != nil {
            try await web.runWebKiosk(socket: socket, steady: steady)
            return
        }
        if once {
            let size = TerminalKiosk.snapshotSize(
                output: STDOUT_FILENO, environment: ProcessInfo.processInfo.environment)
            let frame = TerminalKiosk.snapshot(socket: socket, columns: size.columns, rows: size.rows)
            FileHandle.standardOutput.write(Data(frame.rows.map { $0 + "\n" }.joined().utf8))
            if !frame.answered { throw ExitCode(1) }
            return
        }
        let capabilities = TerminalCapabilities.detect(environment: ProcessInfo.processInfo.environment, choice: colors)
        let ending = await TerminalKiosk.run(.init(socket: socket, steady: steady, capabilities: capabilities))
        switch ending {
        case .signal:
            return
        case .terminal, .feed:
            FileHandle.standardError.write(Data("beacond kiosk: error: \(ending)\n".utf8))
            throw ExitCode(1)
        }
    }
}
