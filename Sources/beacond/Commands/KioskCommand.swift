import ArgumentParser
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
            tell them apart). NO_COLOR or TERM=dumb draw text only. See docs/kiosk.md.
            """
    )

    @Option(help: ArgumentHelp("The daemon's socket.", valueName: "path"))
    var socket = TrackStateServer.defaultPath

    @Flag(help: "Do not flash the evacuation flag (it stays red).")
    var steady = false

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
