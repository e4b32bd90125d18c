import ArgumentParser
import BeacondClient
import Foundation

/// `--web ADDR:PORT` and `--web-allow-remote` of `beacond kiosk`: the flag in a browser instead
/// of the terminal (docs/kiosk-web.md).
struct WebKioskOptions: ParsableArguments {
    @Option(
        name: .customLong("web"),
        help: ArgumentHelp(
            "Serve the kiosk as a web page on ADDR:PORT instead of drawing in the terminal (loopback only "
                + "unless --web-allow-remote; port 0 picks a free one).",
            valueName: "addr:port"),
        transform: { text in
            do throws(WebKioskAddress.ParseError) {
                return try WebKioskAddress(parsing: text)
            } catch {
                throw ValidationError("--web \(error.description)")
            }
        })
    var web: WebKioskAddress?

    @Flag(
        name: .customLong("web-allow-remote"),
        help: "Let --web listen on an address other than loopback (the page is then reachable from the network).")
    var allowRemote = false

    /// Bad usage exits 64: a remote address without --web-allow-remote, or the flag without --web.
    func validate() throws {
        guard let web else {
            if allowRemote { throw ValidationError("--web-allow-remote needs --web ADDR:PORT") }
            return
        }
        if !web.isLoopback && !allowRemote {
            throw ValidationError(WebKiosk.StartError.remoteNotAllowed(web).description)
        }
    }

    /// The web kiosk's configuration, or nil without --web.
    func configuration(
        socket: String, steady: Bool, presentation: KioskPresentation = KioskPresentation(), voice: KioskVoice? = nil
    ) -> WebKiosk.Configuration? {
        guard let web else { return nil }
        var configuration = WebKiosk.Configuration(address: web, socketPath: socket)
        configuration.presentation = presentation
        configuration.voice = voice
        configuration.allowRemote = allowRemote
        configuration.steady = steady
        return configuration
    }

    /// Serves the page until the process ends. Prints the URL on stdout once listening; a
    /// failure to listen exits 1, a refused address 64.
    func runWebKiosk(
        socket: String, steady: Bool, presentation: KioskPresentation, voice: KioskVoice?
    ) async throws {
        guard
            let configuration = configuration(
                socket: socket, steady: steady, presentation: presentation, voice: voice)
        else {
            return
        }
        do {
            try await WebKiosk.run(configuration: configuration) { url in
                FileHandle.standardOutput.write(Data("beacond kiosk: serving \(url) (daemon socket \(socket))\n".utf8))
            }
        } catch let error as WebKiosk.StartError {
            FileHandle.standardError.write(Data("beacond kiosk: error: \(error)\n".utf8))
            if case .remoteNotAllowed = error { throw ExitCode(64) }
            throw ExitCode(1)
        }
    }
}
