import BLEPayload
import BeacondTestSupport
import Foundation
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// Every route of the web kiosk over real HTTP, against a real daemon socket (SocketHarness)
/// and against no daemon at all.
@Suite(.serialized) struct WebKioskRouteTests {
    static let securityHeaders = [
        "x-content-type-options": "nosniff", "cache-control": "no-store", "referrer-policy": "no-referrer",
    ]

    /// The text between `open` and `close` in `page`.
    static func between(_ open: String, _ close: String, in page: String) throws -> String {
        let start = try #require(page.range(of: open))
        let end = try #require(page.range(of: close, range: start.upperBound..<page.endIndex))
        return String(page[start.upperBound..<end.lowerBound])
    }

    static func unescaped(_ attribute: String) -> String {
        attribute.replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&#39;", with: "'")
            .replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&amp;", with: "&")
    }

    /// The view the page paints first, from `<body data-view="…">`.
    static func dataView(_ page: String) throws -> [String: Any] {
        let attribute = unescaped(try between("data-view=\"", "\"", in: page))
        return try #require(try JSONSerialization.jsonObject(with: Data(attribute.utf8)) as? [String: Any])
    }

    static func expectSecurityHeaders(_ response: HTTPTestResponse) {
        for (name, value) in securityHeaders { #expect(response.header(name) == value, "\(name)") }
        #expect(response.header("content-security-policy") == WebKioskAssets.contentSecurityPolicy)
    }

    @Test func pageHealthAndStateWithADaemon() throws {
        try WebKioskHarness.withDaemon { daemon, web in
            try daemon.ingest(zone: 3, mode: .redFlag, address: 0xC0FFEE000003)
            #expect(
                blockingWaitUntil(within: 5) {
                    (try? web.get("/state").json())?["reachable"] as? Bool == true
                        && ((try? web.get("/state").json())?["view"] as? [String: Any])?["flag"] as? String == "red"
                })

            let page = try web.get("/")
            #expect(page.status == 200)
            #expect(page.header("content-type") == "text/html; charset=utf-8")
            Self.expectSecurityHeaders(page)
            let view = try Self.dataView(page.text)
            #expect(view["flag"] as? String == "red")
            #expect(view["headline"] as? String == "RED FLAG")
            #expect(view["background"] as? String == "#d20000")
            #expect((view["details"] as? [String])?.first == "Zone 3")
            #expect(page.text.contains("<h1 id=\"headline\">RED FLAG</h1>"))
            #expect(!page.text.contains("class=\"steady\""))

            let health = try web.get("/healthz")
            #expect(health.status == 200 && health.text == "ok\n")
            Self.expectSecurityHeaders(health)

            let state = try web.get("/state")
            #expect(state.status == 200 && state.header("content-type") == "application/json")
            Self.expectSecurityHeaders(state)
            let document = try state.json()
            #expect(document["reachable"] as? Bool == true)
            let message = try #require(document["state"] as? [String: Any])
            #expect(message["type"] as? String == "state" && message["mode"] as? String == "red_flag")
            #expect(message["zone"] as? Int == 3)
            let stateView = try #require(document["view"] as? [String: Any])
            #expect(stateView["status"] as? String == "RED FLAG" && stateView["flashes"] as? Bool == false)
            #expect(
                Set(stateView.keys) == [
                    "flag", "headline", "status", "details", "flashes", "background", "foreground", "flash_background",
                    "flash_foreground", "arrow", "arrow_deg", "period_ms", "languages", "alarm", "speak_repeat_ms",
                    "seq", "ts",
                ])
            // The view names the published state it shows.
            #expect(stateView["seq"] as? Int == message["seq"] as? Int && stateView["seq"] != nil)
            #expect(stateView["ts"] as? Double == message["ts"] as? Double && stateView["ts"] != nil)
            #expect(stateView["alarm"] as? Bool == false && stateView["speak_repeat_ms"] as? Int == 20000)
            let languages = try #require(stateView["languages"] as? [[String: Any]])
            #expect(languages.count == 1 && languages[0]["lang"] as? String == "en")
            #expect(languages[0]["headline"] as? String == "RED FLAG" && stateView["arrow"] is NSNull)
            #expect(languages[0]["say"] as? String == "Red flag. The session is stopped. Zone 3.")

            // HEAD: the same headers and length, no body.
            let head = try web.get("/state", method: "HEAD")
            #expect(head.status == 200 && head.body.isEmpty && Int(head.header("content-length") ?? "") ?? 0 > 0)
        }
    }

    @Test func withoutADaemonTheKioskSaysNoSignal() throws {
        let web = try WebKioskHarness(socketPath: SocketHarness.temporaryPath())
        defer { web.close() }
        let health = try web.get("/healthz")
        #expect(health.status == 503 && health.text == "daemon unreachable\n")
        Self.expectSecurityHeaders(health)
        let document = try web.get("/state").json()
        #expect(document["reachable"] as? Bool == false)
        #expect(document["state"] is NSNull)
        let view = try #require(document["view"] as? [String: Any])
        #expect(view["flag"] as? String == "no_signal" && view["headline"] as? String == "NO SIGNAL")
        #expect(view["status"] as? String == "NO SIGNAL — daemon unreachable")
        #expect(view["background"] as? String == "#5a5a5a")
        let page = try web.get("/")
        #expect(page.status == 200)
        #expect(try Self.dataView(page.text)["flag"] as? String == "no_signal")
        #expect(page.text.contains("data-flag=\"no_signal\""))
    }

    @Test func theCSPHashesMatchTheServedScriptAndStyle() throws {
        let web = try WebKioskHarness(socketPath: SocketHarness.temporaryPath())
        defer { web.close() }
        let page = try web.get("/")
        let csp = try #require(page.header("content-security-policy"))
        let script = try Self.between("<script>", "</script>", in: page.text)
        let style = try Self.between("<style>", "</style>", in: page.text)
        #expect(csp.contains("script-src 'sha256-\(try opensslSHA256Base64(script))';"))
        #expect(csp.contains("style-src 'sha256-\(try opensslSHA256Base64(style))';"))
        for part in [
            "default-src 'none'", "connect-src 'self'", "img-src 'none'", "base-uri 'none'",
            "form-action 'none'", "frame-ancestors 'none'",
        ] {
            #expect(csp.contains(part), "\(part)")
        }
        // One inline script and one inline style, nothing loaded from elsewhere.
        #expect(page.text.components(separatedBy: "<script").count == 2)
        #expect(page.text.components(separatedBy: "<style").count == 2)
        #expect(!page.text.contains("src=") && !page.text.contains("href="))
    }

    @Test func unknownPathsMethodsAndBodiesAreRefused() throws {
        let web = try WebKioskHarness(socketPath: SocketHarness.temporaryPath())
        defer { web.close() }
        let missing = try web.get("/nope")
        #expect(missing.status == 404)
        Self.expectSecurityHeaders(missing)
        #expect(try web.get("/state/x").status == 404)
        for method in ["POST", "PUT", "DELETE", "OPTIONS"] {
            let refused = try web.get("/", method: method)
            #expect(refused.status == 405, "\(method)")
            #expect(refused.header("allow") == "GET, HEAD")
            Self.expectSecurityHeaders(refused)
        }
        // A GET with a body: 413 and closed, the body unread.
        let connection = try web.connect()
        defer { connection.close() }
        connection.send("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
        let withBody = try connection.readResponse()
        #expect(withBody.status == 413 && withBody.header("connection") == "close")
        #expect(connection.isClosed())
        // Headers beyond NIOHTTP1's limit (80 KiB): 400, closed.
        let huge = try web.connect()
        defer { huge.close() }
        huge.send("GET / HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "a", count: 100_000))\r\n\r\n")
        let tooLarge = try huge.readResponse()
        #expect(tooLarge.status == 400 && tooLarge.header("connection") == "close")
        Self.expectSecurityHeaders(tooLarge)
        #expect(huge.isClosed())
        // Not HTTP at all: the same.
        let garbage = try web.connect()
        defer { garbage.close() }
        garbage.send("\u{1}\u{2}hello\r\n\r\n")
        #expect(try garbage.readResponse().status == 400)
        #expect(garbage.isClosed())
    }

    @Test func keepAliveServesSeveralRequestsAndIdleConnectionsAreClosed() throws {
        let web = try WebKioskHarness(socketPath: SocketHarness.temporaryPath()) {
            $0.idleTimeout = .milliseconds(300)
        }
        defer { web.close() }
        let connection = try web.connect()
        defer { connection.close() }
        for _ in 0..<3 {
            connection.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try connection.readResponse().status == 503)
        }
        let started = MonotonicClock.micros()
        #expect(connection.isClosed(timeout: 3))
        #expect(MonotonicClock.micros() - started >= 200_000)
    }
}
