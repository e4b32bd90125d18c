import ArgumentParser
import BeacondClient
import Foundation

#if canImport(Glibc)
import Glibc
#endif

struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Print the running daemon's state and beacon table once.",
        discussion: """
            Connects to the daemon's socket, reads the greeting, sends {"cmd":"status"} and prints \
            the answer: the track mode, source and zone, remote and scanner health, MQTT health, the \
            configuration file in force (path, SHA-256, reloads), the active overrides and the recently \
            heard beacons. With --json, prints the status object as the \
            daemon sent it (one line; see \(DocumentationPath.named("protocol.md"))). Exits 1 when no \
            daemon answers.
            """
    )

    @Option(help: ArgumentHelp("The daemon's socket.", valueName: "path"))
    var socket = TrackStateClient.defaultPath

    @Flag(help: "Print the raw status object (one JSON line).")
    var json = false

    @Option(
        help: ArgumentHelp("Seconds to wait for the daemon, 0.001 to 3600.", valueName: "seconds"),
        transform: SecondsArgument.parser(.statusTimeout))
    var timeout = SecondsArgument(micros: 5_000_000)

    func run() throws {
        // --json prints the line as the daemon sent it, fields this version does not know included.
        let reply: TrackStateClient.Message
        let status: StatusMessage?
        do {
            reply = try TrackStateClient.fetchStatus(path: socket, timeout: Double(timeout.micros) / 1_000_000)
            status = json ? nil : try reply.status(path: socket)
        } catch {
            FileHandle.standardError.write(Data("beacond status: error: \(error)\n".utf8))
            throw ExitCode(1)
        }
        if let status {
            print(StatusReport.render(status), terminator: "")
        } else {
            print(reply.text)
        }
    }
}
