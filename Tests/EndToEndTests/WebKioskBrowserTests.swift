import BLEPayload
import BeacondTestSupport
import Foundation
import Glibc
import Testing

/// The web kiosk in a real browser: Debian's Chromium, headless, loads the page served by the
/// real `beacond` binary following a real daemon (`beacond run --backend replay` on a one-frame
/// capture that holds the mode), takes a screenshot and dumps the DOM. The screenshot's dominant
/// colour must be the flag's, and the page must say the mode in words. Screenshots go to a
/// temporary directory.
@Suite(
    .serialized,
    .chromiumInstalled, .python3Installed("it decodes the screenshots"))
struct WebKioskBrowserTests {
    static let chromium = "/usr/bin/chromium"

    /// The kiosk command: the web half of `beacond kiosk`.
    static func kioskArguments(socket: String, steady: Bool) -> [String] {
        ["kiosk", "--web", "127.0.0.1:0", "--socket", socket] + (steady ? ["--steady"] : [])
    }

    /// A daemon holding `mode` in `zone`: a frame (TTL 255 s) replayed at real speed, the next
    /// ten minutes later, so the override holds for the whole test.
    static func daemon(mode: GeoRacingMode, zone: UInt16) throws -> DaemonProcess {
        let name = "kiosk-\(mode)-\(UUID().uuidString.prefix(6)).btsnoop"
        let start: Int64 = 1_700_000_000_000_000
        let capture = CaptureTimeExtremesTests.btsnoop(
            name,
            [
                (start, CaptureTimeExtremesTests.h4(zone: zone, mode: mode, sequence: 1, ttl: 255)),
                (start + 600_000_000, CaptureTimeExtremesTests.h4(zone: zone, mode: mode, sequence: 2, ttl: 255)),
            ])
        return try DaemonProcess(["--backend", "replay", "--replay", capture, "--speed", "1"])
    }

    struct Shot {
        var dom: String
        var colour: String
        var share: Double
    }

    /// Waits until the page says `flag` (the DOM polled with --dump-dom), then screenshots it.
    static func load(_ url: String, flag: String, name: String) throws -> Shot {
        var dom = ""
        let shown = blockingWaitUntil(within: 15, intervalMicros: 200_000) {
            dom = (try? browser(["--dump-dom", url]).stdout) ?? ""
            return dom.contains("data-flag=\"\(flag)\"")
        }
        #expect(shown, "the page never showed \(flag): \(dom.suffix(600))")
        let directory = BeacondProcess.temporaryFile("kiosk-screenshots")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let file = directory + "/\(name).png"
        let shot = try browser(["--hide-scrollbars", "--window-size=800,600", "--screenshot=\(file)", url])
        #expect(FileManager.default.fileExists(atPath: file), "no screenshot: \(shot.stderr.suffix(400))")
        let decoded = try run("/usr/bin/python3", [RepositoryPaths.fixture("png_colours.py"), file])
        let fields = decoded.stdout.split(separator: " ")
        #expect(decoded.status == 0 && fields.count == 2, "\(decoded.stderr)")
        return Shot(
            dom: dom, colour: fields.first.map(String.init) ?? "",
            share: fields.last.flatMap { Double($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? 0)
    }

    static func browser(_ arguments: [String]) throws -> BeacondProcess.Result {
        try run(
            "/usr/bin/timeout",
            ["60", chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"] + arguments)
    }

    static func run(_ tool: String, _ arguments: [String]) throws -> BeacondProcess.Result {
        try BeacondProcess.run(URL(fileURLWithPath: tool), arguments)
    }

    /// The text of element `id` in a dumped DOM.
    static func text(of id: String, in dom: String) -> String? {
        guard let start = dom.range(of: "id=\"\(id)\""),
            let open = dom.range(of: ">", range: start.upperBound..<dom.endIndex),
            let close = dom.range(of: "</", range: open.upperBound..<dom.endIndex)
        else { return nil }
        return String(dom[open.upperBound..<close.lowerBound])
    }

    @Test(arguments: [
        (GeoRacingMode.normal, "green", "GREEN", "#009639"),
        (GeoRacingMode.redFlag, "red", "RED FLAG", "#d20000"),
        (GeoRacingMode.evacuation, "evacuation", "EVACUATE", "#d20000"),
    ])
    func theFlagFillsTheWindow(mode: GeoRacingMode, flag: String, headline: String, colour: String) throws {
        let daemon = try Self.daemon(mode: mode, zone: 4)
        defer { _ = daemon.stop() }
        let kiosk = try WebKioskProcess(Self.kioskArguments(socket: daemon.socket, steady: mode == .evacuation))
        defer { kiosk.stop() }
        let url = try #require(kiosk.waitForURL())
        let shot = try Self.load(url, flag: flag, name: flag)
        #expect(shot.colour == colour, "dominant colour \(shot.colour), \(shot.share)")
        #expect(shot.share > 0.5)
        #expect(Self.text(of: "headline", in: shot.dom) == headline)
        #expect(Self.text(of: "status", in: shot.dom) == headline)
        #expect(shot.dom.contains("<li>Zone 4</li>") && shot.dom.contains("<li>Source: track beacon</li>"))
        if mode == .evacuation { #expect(shot.dom.contains("class=\"steady flash\"")) }
    }

    @Test func aStoppedDaemonShowsNoSignal() throws {
        let daemon = try Self.daemon(mode: .redFlag, zone: 4)
        let kiosk = try WebKioskProcess(Self.kioskArguments(socket: daemon.socket, steady: false))
        defer { kiosk.stop() }
        let url = try #require(kiosk.waitForURL())
        _ = try Self.load(url, flag: "red", name: "before-stop")
        #expect(daemon.stop() != nil)
        let shot = try Self.load(url, flag: "no_signal", name: "no-signal")
        #expect(shot.colour == "#5a5a5a", "dominant colour \(shot.colour), \(shot.share)")
        #expect(shot.share > 0.5)
        #expect(Self.text(of: "headline", in: shot.dom) == "NO SIGNAL")
        #expect(Self.text(of: "status", in: shot.dom) == "NO SIGNAL — daemon unreachable")
    }

    /// The page loses its stream (here: the kiosk server refuses it, its 64 streams taken): it
    /// shows NO SIGNAL — kiosk server unreachable, not the red flag it got at first paint.
    @Test func aRefusedStreamShowsTheKioskServerUnreachable() throws {
        let daemon = try Self.daemon(mode: .redFlag, zone: 4)
        defer { _ = daemon.stop() }
        let kiosk = try WebKioskProcess(Self.kioskArguments(socket: daemon.socket, steady: false))
        defer { kiosk.stop() }
        let url = try #require(kiosk.waitForURL())
        _ = try Self.load(url, flag: "red", name: "before-full")
        let port = try #require(URL(string: url)?.port)
        let streams = (0..<64).compactMap { _ in rawStream(port: port) }
        defer { for stream in streams { close(stream) } }
        #expect(streams.count == 64)
        var dom = ""
        let lost = blockingWaitUntil(within: 20, intervalMicros: 200_000) {
            dom = (try? Self.browser(["--dump-dom", url]).stdout) ?? ""
            return Self.text(of: "status", in: dom) == "NO SIGNAL — kiosk server unreachable"
        }
        #expect(lost, "\(Self.text(of: "status", in: dom) ?? dom.suffix(300).description)")
        #expect(dom.contains("data-flag=\"no_signal\"") && Self.text(of: "headline", in: dom) == "NO SIGNAL")
    }
}

/// A TCP connection to 127.0.0.1:`port` that asked for `/events` and never reads; nil on failure.
func rawStream(port: Int) -> CInt? {
    guard let fd = TCPTestClient.connect(port: port) else { return nil }
    guard TCPTestClient.send(fd, "GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n") else {
        close(fd)
        return nil
    }
    return fd
}

/// `beacond kiosk --web` in the background; its stdout announces the URL.
final class WebKioskProcess: @unchecked Sendable {
    let process = Process()
    private let lock = NSLock()
    private var output = Data()
    private var errors = Data()
    private let outPipe = Pipe()
    private let errPipe = Pipe()

    /// `launcher`: a command that execs beacond in its own place (e.g. `prlimit --nofile=64:64 --`).
    init(_ arguments: [String], launcher: [String] = []) throws {
        if let tool = launcher.first {
            process.executableURL = URL(fileURLWithPath: tool)
            process.arguments = Array(launcher.dropFirst()) + [BeacondProcess.executable.path] + arguments
        } else {
            process.executableURL = BeacondProcess.executable
            process.arguments = arguments
        }
        process.standardOutput = outPipe
        process.standardError = errPipe
        outPipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let chunk = handle.availableData
            guard let self, !chunk.isEmpty else { return }
            self.lock.withLock { self.output.append(chunk) }
        }
        errPipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let chunk = handle.availableData
            guard let self, !chunk.isEmpty else { return }
            self.lock.withLock { self.errors.append(chunk) }
        }
        try process.run()
    }

    /// What it logged on stderr so far.
    var logText: String { lock.withLock { String(decoding: errors, as: UTF8.self) } }

    deinit { stop() }

    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        outPipe.fileHandleForReading.readabilityHandler = nil
        errPipe.fileHandleForReading.readabilityHandler = nil
    }

    var text: String { lock.withLock { String(decoding: output, as: UTF8.self) } }

    /// `http://127.0.0.1:PORT/` once announced.
    func waitForURL(timeout: Double = 10) -> String? {
        var url: String?
        _ = blockingWaitUntil(within: timeout, intervalMicros: 20_000) {
            guard let start = text.range(of: "http://"), let end = text[start.lowerBound...].firstIndex(of: " ")
            else { return false }
            url = String(text[start.lowerBound..<end])
            return true
        }
        return url
    }
}

/// The web kiosk's command line, without a browser.
struct WebKioskCommandTests {
    @Test func aRemoteAddressWithoutTheFlagExits64() throws {
        let refused = try BeacondProcess.run(["kiosk", "--web", "0.0.0.0:0", "--socket", "/nonexistent"])
        #expect(refused.status == 64)
        #expect(refused.stderr.contains("--web-allow-remote") && refused.stderr.contains("0.0.0.0:0"))
        let malformed = try BeacondProcess.run(["kiosk", "--web", "localhost"])
        #expect(malformed.status == 64 && malformed.stderr.contains("has no port"))
    }

    @Test func sigtermAndSigintEndTheWebKioskCleanly() throws {
        for signal in [SIGTERM, SIGINT] {
            let kiosk = try WebKioskProcess(["kiosk", "--web", "127.0.0.1:0", "--socket", "/nonexistent/beacond.sock"])
            #expect(kiosk.waitForURL() != nil)
            kill(kiosk.process.processIdentifier, signal)
            #expect(blockingWaitUntil(within: 10) { !kiosk.process.isRunning })
            #expect(kiosk.process.terminationReason == .exit)
            #expect(kiosk.process.terminationStatus == 0)
        }
    }
}
