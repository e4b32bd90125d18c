import Testing

@testable import BeacondClient
@testable import BeacondCore

/// Issue 10, item 5: one validator for `remote.url` (`RemoteURL`), used by the config keys and by the
/// poller's `RemoteEndpoint`, so a URL the config accepts is one the poller can use, and back.
@Suite struct ConfigRemoteURLTests {
    static let urls = [
        "http://127.0.0.1:8080/state", "https://race.example/api/state?x=1", "HTTPS://Race.Example/state",
        "http://user:pw@race.example/state", "file:///tmp/state.json", "file:///tmp/a%20b.json",
        "ftp://race.example/state", "https:///state", "http://:80/state", "http://user@/state",
        "race.example/state", "file://tmp/state.json", "file://localhost/tmp/state.json", "file:///tmp/%zz",
        "http://race example/state", "gopher://x", "://x", "http://[::1/state",
    ]

    @Test(arguments: urls)
    func theConfigAndThePollerAgree(text: String) {
        var configReason: String?
        do throws(ConfigValueProblem) {
            _ = try ConfigValueParser.url(.flag(text))
        } catch {
            configReason = error.reason
        }
        do {
            _ = try RemoteEndpoint(parsing: text)
            #expect(configReason == nil, "the poller takes what the config refuses: \(configReason ?? "")")
        } catch {
            #expect(configReason != nil, "the config takes what the poller refuses: \(error)")
            #expect("\(error)" == "remote URL: \(configReason ?? "")")
        }
    }

    @Test func theEndpointIsWhatTheURLNames() throws {
        #expect(try RemoteEndpoint(parsing: "file:///tmp/a%20b.json?v=1#x") == .file(path: "/tmp/a b.json"))
        #expect(
            try RemoteEndpoint(parsing: "HTTPS://race.example/s")
                == .http(url: "HTTPS://race.example/s", secure: true))
        #expect(
            try RemoteEndpoint(parsing: "http://race.example/s")
                == .http(url: "http://race.example/s", secure: false))
    }

    @Test func refusalsKeepTheirReasons() {
        let cases = [
            ("race.example/state", "\"race.example/state\" is not a URL (expected http://, https:// or file://)"),
            ("ftp://x/state", "unsupported URL scheme \"ftp\" (expected http, https or file)"),
            ("https:///state", "\"https:///state\" has no host"),
            ("file://tmp/state.json", "\"file://tmp/state.json\" needs an absolute path (file:///path)"),
            ("http://a b/", "\"http://a b/\" contains whitespace"),
            ("file:///tmp/%zz", "\"file:///tmp/%zz\" has a bad percent-escape in its path"),
        ]
        for (text, reason) in cases {
            #expect(throws: RemoteURL.Problem(reason: reason)) { try RemoteURL(parsing: text) }
        }
    }
}
