import ArgumentParser
import Foundation
import Testing

@testable import BeacondClient
@testable import BeacondCore
@testable import beacond

/// The page's constants, its escaping, the view JSON, and the listen address rules.
struct WebKioskPageTests {
    @Test func theHashConstantsAreTheSHA256OfTheInlineScriptAndStyle() throws {
        // If this fails after editing WebKioskAssets, put the computed value in the constant.
        #expect(WebKioskAssets.scriptHash == "sha256-\(try opensslSHA256Base64(WebKioskAssets.script))")
        #expect(WebKioskAssets.styleHash == "sha256-\(try opensslSHA256Base64(WebKioskAssets.style))")
        #expect(
            WebKioskAssets.previewScriptHash == "sha256-\(try opensslSHA256Base64(WebKioskAssets.previewScript))")
        #expect(WebKioskAssets.previewStyleHash == "sha256-\(try opensslSHA256Base64(WebKioskAssets.previewStyle))")
        // The pipeline itself, on FIPS 180-4's "abc" example.
        #expect(try opensslSHA256Base64("abc") == "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=")
    }

    @Test func outsideTextCannotBreakOutOfTheAttributeOrTheElements() throws {
        var view = WebKioskViewDocument(flag: .yellow, status: "YELLOW", details: [])
        view.details = ["Race control: \"><script>alert(1)</script>&'x"]
        let page = String(decoding: WebKioskPage.html(view: view, steady: true), as: UTF8.self)
        #expect(page.components(separatedBy: "<script").count == 2)
        #expect(page.contains("<li>Race control: &quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;&amp;&#39;x</li>"))
        #expect(page.contains("<body class=\"steady\""))
        let attribute = try WebKioskRouteTests.between("data-view=\"", "\"", in: page)
        #expect(!attribute.contains("<") && !attribute.contains("'"))
        let decoded = try #require(
            try JSONSerialization.jsonObject(with: Data(WebKioskRouteTests.unescaped(attribute).utf8))
                as? [String: Any])
        #expect(decoded["details"] as? [String] == view.details)
        #expect(decoded["background"] as? String == KioskColors.of(.yellow).background.hex)
    }

    @Test func theViewJSONCarriesBothFlashPhasesAndNoRawLineBreaks() throws {
        let view = WebKioskViewDocument(flag: .evacuation, status: "EVACUATE", details: ["a\nb", "c\u{2028}d"])
        let json = view.json()
        #expect(!json.contains("\n") && !json.contains("\r") && !json.contains("\u{2028}"))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        #expect(object["flashes"] as? Bool == true)
        #expect(object["background"] as? String == "#d20000" && object["foreground"] as? String == "#ffffff")
        #expect(object["flash_background"] as? String == "#ffffff")
        #expect(object["flash_foreground"] as? String == "#d20000")
        #expect(WebKioskPage.lostView.status == "NO SIGNAL — kiosk server unreachable")
        #expect(WebKioskPage.lostView.flag == .noSignal)
    }

    @Test func listenAddresses() throws {
        let loopback = ["127.0.0.1:8080", "localhost:80", "[::1]:8080", "[0:0:0:0:0:0:0:1]:1", "127.1.2.3:0"]
        for text in loopback { #expect(try WebKioskAddress(parsing: text).isLoopback, "\(text)") }
        let remote = ["0.0.0.0:8080", "192.168.1.10:80", "[::]:8080", "[::ffff:127.0.0.1]:80", "[fe80::1]:80"]
        for text in remote { #expect(try !WebKioskAddress(parsing: text).isLoopback, "\(text)") }
        #expect(try WebKioskAddress(parsing: "localhost:8080").host == "127.0.0.1")
        #expect(try WebKioskAddress(parsing: "[::1]:8080").description == "[::1]:8080")
        let bad: [(String, WebKioskAddress.ParseError)] = [
            ("8080", .missingPort("8080")), ("127.0.0.1:", .badPort("127.0.0.1:")),
            ("127.0.0.1:65536", .badPort("127.0.0.1:65536")), ("127.0.0.1:-1", .badPort("127.0.0.1:-1")),
            ("example.com:80", .badHost("example.com:80")), ("[::1]8080", .missingPort("[::1]8080")),
            ("::1:8080", .badHost("::1:8080")), ("256.0.0.1:80", .badHost("256.0.0.1:80")),
            ("[zz::1]:80", .badHost("[zz::1]:80")),
        ]
        for (text, expected) in bad {
            #expect(throws: expected, "\(text)") { try WebKioskAddress(parsing: text) }
        }
    }

    @Test func aRemoteAddressNeedsTheFlag() throws {
        let address = try WebKioskAddress(parsing: "0.0.0.0:0")
        var configuration = WebKiosk.Configuration(address: address, socketPath: "/nonexistent")
        #expect {
            _ = try WebKioskServer(configuration: configuration)
        } throws: { error in
            guard case .remoteNotAllowed = error as? WebKiosk.StartError else { return false }
            return "\(error)".contains("--web-allow-remote")
        }
        configuration.allowRemote = true
        try WebKioskServer(configuration: configuration).shutdownBlocking()

        // The flags: exit 64 without --web-allow-remote, accepted with it.
        do {
            _ = try WebKioskOptions.parse(["--web", "0.0.0.0:8080"])
            Issue.record("a remote address was accepted without --web-allow-remote")
        } catch {
            #expect(WebKioskOptions.exitCode(for: error) == ExitCode(64))
            #expect(WebKioskOptions.message(for: error).contains("--web-allow-remote"))
        }
        let options = try WebKioskOptions.parse(["--web", "0.0.0.0:8080", "--web-allow-remote"])
        #expect(options.configuration(socket: "/s", steady: true)?.allowRemote == true)
        #expect(
            try WebKioskOptions.parse(["--web", "[::1]:9000"]).configuration(socket: "/s", steady: false)?
                .address.port == 9000)
        #expect(throws: (any Error).self) { try WebKioskOptions.parse(["--web-allow-remote"]) }
        #expect(throws: (any Error).self) { try WebKioskOptions.parse(["--web", "host:80"]) }
    }

    @Test func aPortInUseIsABindFailure() throws {
        let first = try WebKioskHarness(socketPath: SocketHarness.temporaryPath())
        defer { first.close() }
        let address = try WebKioskAddress(parsing: "127.0.0.1:\(first.port)")
        let second = try WebKioskServer(configuration: WebKiosk.Configuration(address: address, socketPath: "/x"))
        #expect {
            try second.startBlocking()
        } throws: { error in
            guard case .bindFailed(let failed, _) = error as? WebKiosk.StartError else { return false }
            return failed == address && "\(error)".contains("cannot listen on 127.0.0.1:\(first.port)")
        }
        // The first still serves.
        #expect(try first.get("/healthz").status == 503)
    }
}
