import BLEPayload
import BeacondTestSupport
import CircuitState
import Foundation
import Logging
import Testing

@testable import BeacondClient
@testable import BeacondCore

@Suite struct ConfigFileTests {
    static let second: Int64 = 1_000_000

    @Test func emptyAndCommentOnlyFilesGiveTheDefaults() throws {
        let scratch = ConfigScratch()
        for text in ["", "# nothing set\n", "---\n", "scanner:\nfusion: ~\n"] {
            let configuration = try scratch.load(text)
            #expect(configuration == DaemonConfiguration(), "\(text.debugDescription)")
            #expect(configuration.scanner.backend == .hci)
            #expect(configuration.scanner.adapters == .named(["hci0"]))
            #expect(configuration.scanner.companyID == 0x1234)
            #expect(configuration.scanner.replay == nil)
            #expect(configuration.scanner.speed == .factor(millionths: 1_000_000))
            #expect(configuration.scanner.loop == false)
            #expect(configuration.scanner.silenceRestart == 60 * Self.second)
            #expect(configuration.remote.url == nil)
            #expect(configuration.remote.pollInterval == 5 * Self.second)
            #expect(configuration.remote.timeout == 3 * Self.second)
            #expect(configuration.remote.staleAfter == 15 * Self.second)
            #expect(configuration.remote.caFile == nil)
            #expect(configuration.remote.bearerTokenFile == nil)
            #expect(configuration.fusion.policy == .safety)
            #expect(configuration.fusion.minRSSI == -90)
            #expect(configuration.fusion.zones.isEmpty)
            #expect(configuration.fusion.maxTTL == 120 * Self.second)
            #expect(configuration.fusion.allow.isEmpty)
            #expect(configuration.fusion.maxDistance == nil)
            #expect(configuration.fusion.maxEntries == 4096)
            #expect(configuration.socket.path == "/run/beacond/beacond.sock")
            #expect(configuration.socket.maxClients == 1024)
            #expect(configuration.stateDir == "/var/lib/beacond")
            #expect(configuration.log.level == .info)
            #expect(configuration.record.path == nil)
            #expect(configuration.record.maxMB == 100)
            #expect(configuration.record.keep == 5)
        }
    }

    @Test func everyKeyParses() throws {
        let scratch = ConfigScratch()
        let capture = scratch.write("demo.btsnoop", "x")
        scratch.write("ca.pem", "pem")
        scratch.write("token", "secret")
        let configuration = try scratch.load(
            """
            scanner:
              backend: replay
              adapter: hci1
              company_id: "0xFFFE"
              replay: demo.btsnoop
              speed: 2.5
              loop: true
              silence_restart_s: 30
            remote:
              url: https://race-control.example:8443/api/state
              poll_interval: 2
              timeout: 1.5
              stale_after: 20
              ca_file: ca.pem
              bearer_token_file: /\(scratch.directory.dropFirst())/token
            fusion:
              policy: beacon-first
              min_rssi: -75
              zones: [1, 2, 0x10]
              max_ttl: 60
              allow:
                - "AA:BB:CC:DD:EE:01"
                - 11:22:33:44:55:66
                - 42
                - 0x100
              max_distance_m: 12.5
              max_entries: 512
            socket:
              path: /tmp/beacond-test.sock
              max_clients: 2000
            state_dir: state
            log:
              level: debug
            record:
              path: /var/log/beacond/adverts.pcap
              max_mb: 50
              keep: 3
            """)
        #expect(configuration.scanner.backend == .replay)
        #expect(configuration.scanner.adapters == .named(["hci1"]))
        #expect(configuration.scanner.companyID == 0xFFFE)
        #expect(configuration.scanner.replay == capture)
        #expect(configuration.scanner.speed == .factor(millionths: 2_500_000))
        #expect(configuration.scanner.loop == true)
        #expect(configuration.scanner.silenceRestart == 30 * Self.second)
        #expect(configuration.remote.url == "https://race-control.example:8443/api/state")
        #expect(configuration.remote.pollInterval == 2 * Self.second)
        #expect(configuration.remote.timeout == 1_500_000)
        #expect(configuration.remote.staleAfter == 20 * Self.second)
        #expect(configuration.remote.caFile == scratch.directory + "/ca.pem")
        #expect(configuration.remote.bearerTokenFile == scratch.directory + "/token")
        #expect(configuration.fusion.policy == .beaconFirst)
        #expect(configuration.fusion.minRSSI == -75)
        #expect(configuration.fusion.zones == [1, 2, 16])
        #expect(configuration.fusion.maxTTL == 60 * Self.second)
        #expect(
            configuration.fusion.allow.addresses
                == [BluetoothAddress("AA:BB:CC:DD:EE:01")!, BluetoothAddress("11:22:33:44:55:66")!])
        #expect(configuration.fusion.allow.sourceIDs == [42, 256])
        #expect(configuration.fusion.maxDistance == 12.5)
        #expect(configuration.fusion.maxEntries == 512)
        #expect(configuration.socket.path == "/tmp/beacond-test.sock")
        #expect(configuration.socket.maxClients == 2000)
        #expect(configuration.stateDir == scratch.directory + "/state")
        #expect(configuration.log.level == .debug)
        #expect(configuration.record.path == "/var/log/beacond/adverts.pcap")
        #expect(configuration.record.maxMB == 50)
        #expect(configuration.record.keep == 3)
    }

    @Test(arguments: [("4660", UInt16(0x1234)), ("0x1234", 0x1234), ("\"0x00ff\"", 0xFF), ("'65535'", 0xFFFF)])
    func companyIDTakesDecimalOrHex(text: String, expected: UInt16) throws {
        let configuration = try ConfigScratch().load("scanner:\n  company_id: \(text)\n")
        #expect(configuration.scanner.companyID == expected)
    }

    @Test func speedTakesMax() throws {
        let configuration = try ConfigScratch().load("scanner:\n  speed: max\n")
        #expect(configuration.scanner.speed == .max)
    }

    @Test func decimalSecondsAreExact() throws {
        let scratch = ConfigScratch()
        // 4.35 × 1e6 in binary floating point is 4349999.999…; the parser never goes through Double.
        let configuration = try scratch.load(
            """
            remote:
              stale_after: 4.35
              poll_interval: "2.5"
              timeout: 0.100001
            fusion:
              max_ttl: 0.29
            """)
        #expect(configuration.remote.staleAfter == 4_350_000)
        #expect(configuration.remote.pollInterval == 2_500_000)
        #expect(configuration.remote.timeout == 100_001)
        #expect(configuration.fusion.maxTTL == 290_000)
        let flagged = try DaemonOverrides(staleAfter: "2.5").applied(to: DaemonConfiguration())
        #expect(flagged.remote.staleAfter == 2_500_000)
    }

    @Test func zonesTakeACommaListOrAll() throws {
        let scratch = ConfigScratch()
        #expect(try scratch.load("fusion:\n  zones: 3, 7\n").fusion.zones == [3, 7])
        #expect(try scratch.load("fusion:\n  zones: all\n").fusion.zones == [])
        #expect(try scratch.load("fusion:\n  zones: []\n").fusion.zones == [])
        #expect(try scratch.load("fusion:\n  zones: 5\n").fusion.zones == [5])
    }

    @Test func unknownKeyNamesFileKeyLineAndColumn() {
        let scratch = ConfigScratch()
        let problems = scratch.problems(
            """
            fusion:
              policy: safety
              min_rsi: -80
            """)
        #expect(problems.count == 1)
        let problem = problems.first
        #expect(problem?.file == scratch.configPath)
        #expect(problem?.key == "fusion.min_rsi")
        #expect(problem?.line == 3)
        #expect(problem?.column == 3)
        #expect(problem?.reason == "unknown key (did you mean fusion.min_rssi?)")
        #expect(
            problem?.description
                == "\(scratch.configPath):3:3: fusion.min_rsi: unknown key (did you mean fusion.min_rssi?)")
    }

    @Test func keyInTheWrongSectionSuggestsTheRightOne() {
        let problems = ConfigScratch().problems("fusion:\n  stale_after: 10\n")
        #expect(problems.map(\.key) == ["fusion.stale_after"])
        #expect(problems.first?.reason == "unknown key (did you mean remote.stale_after?)")
    }

    @Test func unknownSectionAndTopLevelKeyAreErrors() {
        let problems = ConfigScratch().problems(
            """
            scaner:
              backend: hci
            colour: blue
            """)
        #expect(problems.map(\.key) == ["scaner", "colour"])
        #expect(problems.map(\.line) == [1, 3])
        #expect(problems.first?.reason == "unknown key (did you mean scanner?)")
        #expect(problems.last?.reason == "unknown key")
    }

    @Test func everyProblemIsReportedInFileOrder() {
        let problems = ConfigScratch().problems(
            """
            scanner:
              backend: usb
            fusion:
              policy: safe
              min_rssi: -200
            log:
              level: verbose
            """)
        #expect(problems.map(\.key) == ["scanner.backend", "fusion.policy", "fusion.min_rssi", "log.level"])
        #expect(problems.map(\.line) == [2, 4, 5, 7])
    }

    struct BadValue: Sendable, CustomStringConvertible {
        var yaml: String
        var key: String
        var line: Int
        var reason: String
        var description: String { key + ": " + reason }
    }

    static let badValues: [BadValue] = [
        BadValue(
            yaml: "fusion:\n  min_rssi: loud\n", key: "fusion.min_rssi", line: 2,
            reason: "expected an integer (decimal or 0x hex), found \"loud\""),
        BadValue(
            yaml: "fusion:\n  min_rssi: -200\n", key: "fusion.min_rssi", line: 2,
            reason: "must be between -127 and 20, found -200"),
        BadValue(
            yaml: "fusion:\n  min_rssi: -80.5\n", key: "fusion.min_rssi", line: 2,
            reason: "expected a whole number, found \"-80.5\""),
        BadValue(
            yaml: "fusion:\n  policy: safe\n", key: "fusion.policy", line: 2,
            reason: "unknown policy \"safe\" (expected safety, beacon-first or most-severe)"),
        BadValue(
            yaml: "fusion:\n  policy: [safety]\n", key: "fusion.policy", line: 2,
            reason: "expected a policy, found a list"),
        BadValue(
            yaml: "fusion:\n  allow:\n    - AA:BB:CC:DD:EE:FF\n    - ZZ:BB:CC:DD:EE:FF\n", key: "fusion.allow",
            line: 4,
            reason: "entry 2: \"ZZ:BB:CC:DD:EE:FF\" is neither an address like AA:BB:CC:DD:EE:FF nor a source id"),
        BadValue(
            yaml: "fusion:\n  allow: [-1]\n", key: "fusion.allow", line: 2,
            reason: "entry 1: source id -1 is outside 0...4294967295"),
        BadValue(
            yaml: "fusion:\n  zones: [1, 70000]\n", key: "fusion.zones", line: 2,
            reason: "entry 2: zone 70000 is outside 0...65535"),
        BadValue(
            yaml: "fusion:\n  zones: {a: 1}\n", key: "fusion.zones", line: 2,
            reason: "expected a list, found a mapping"),
        BadValue(
            yaml: "fusion:\n  max_ttl: 0\n", key: "fusion.max_ttl", line: 2,
            reason: "must be between 0.1 and 86400 seconds, found 0"),
        BadValue(
            yaml: "fusion:\n  max_distance_m: -3\n", key: "fusion.max_distance_m", line: 2,
            reason: "must be between 0.1 and 1000 metres, found -3"),
        BadValue(
            yaml: "fusion:\n  max_entries: 0\n", key: "fusion.max_entries", line: 2,
            reason: "must be between 1 and 1000000, found 0"),
        BadValue(
            yaml: "remote:\n  poll_interval: -1\n", key: "remote.poll_interval", line: 2,
            reason: "must not be negative, found -1"),
        BadValue(
            yaml: "remote:\n  stale_after: 2.1234567\n", key: "remote.stale_after", line: 2,
            reason: "\"2.1234567\" has more than 6 decimal places (the resolution is a microsecond)"),
        BadValue(
            yaml: "remote:\n  timeout: 3s\n", key: "remote.timeout", line: 2,
            reason: "expected a number of seconds (like 5 or 2.5), found \"3s\""),
        BadValue(
            yaml: "remote:\n  timeout:\n", key: "remote.timeout", line: 2,
            reason: "a value is required: expected a number of seconds"),
        BadValue(
            yaml: "remote:\n  url: ftp://example.com/state\n", key: "remote.url", line: 2,
            reason: "unsupported URL scheme \"ftp\" (expected http, https or file)"),
        BadValue(
            yaml: "remote:\n  url: https:///state\n", key: "remote.url", line: 2,
            reason: "\"https:///state\" has no host"),
        BadValue(
            yaml: "remote:\n  ca_file: /nonexistent/beacond-ca.pem\n", key: "remote.ca_file", line: 2,
            reason: "cannot read \"/nonexistent/beacond-ca.pem\": No such file or directory"),
        BadValue(
            yaml: "scanner:\n  backend: usb\n", key: "scanner.backend", line: 2,
            reason: "unknown backend \"usb\" (expected hci, bluez or replay)"),
        BadValue(
            yaml: "scanner:\n  loop: maybe\n", key: "scanner.loop", line: 2,
            reason: "expected true or false, found \"maybe\""),
        BadValue(
            yaml: "scanner:\n  speed: 0\n", key: "scanner.speed", line: 2,
            reason: "must be greater than 0 (or max)"),
        BadValue(
            yaml: "scanner:\n  company_id: 0x10000\n", key: "scanner.company_id", line: 2,
            reason: "must be between 0 and 65535, found 0x10000"),
        BadValue(
            yaml: "scanner:\n  adapter: \"hci 0\"\n", key: "scanner.adapter", line: 2,
            reason: "\"hci 0\" is not an adapter name like hci0"),
        BadValue(
            yaml: "scanner: hci\n", key: "scanner", line: 1,
            reason: "expected a mapping of keys (scanner.backend, scanner.adapter, scanner.company_id, "
                + "scanner.replay, scanner.speed, scanner.loop, scanner.silence_restart_s, scanner.active, "
                + "scanner.kernel_filter, scanner.scan_interval_ms, scanner.scan_window_ms, scanner.bluez_refresh_s)"),
        BadValue(
            yaml: "socket:\n  path: /\(String(repeating: "s", count: 120))\n", key: "socket.path", line: 2,
            reason: "\"/\(String(repeating: "s", count: 59))…\" is 121 bytes long; a Unix socket path holds "
                + "at most 107"),
        BadValue(
            yaml: "socket:\n  max_clients: lots\n", key: "socket.max_clients", line: 2,
            reason: "expected an integer (decimal or 0x hex), found \"lots\""),
        BadValue(yaml: "state_dir: [a, b]\n", key: "state_dir", line: 1, reason: "expected a path, found a list"),
        BadValue(yaml: "state_dir: \"\"\n", key: "state_dir", line: 1, reason: "must not be empty"),
        BadValue(
            yaml: "log:\n  level: verbose\n", key: "log.level", line: 2,
            reason: "unknown log level \"verbose\" (expected trace, debug, info, notice, warning, error or critical)"),
        BadValue(
            yaml: "record:\n  keep: -1\n", key: "record.keep", line: 2,
            reason: "must be between 0 and 1000, found -1"),
        BadValue(
            yaml: "remote:\n  url: \"http://a\\u001b[2J\"\n", key: "remote.url", line: 2,
            reason: "\"http://a\\u{1b}[2J\" contains a control character"),
    ]

    @Test(arguments: badValues)
    func invalidValueGivesASpecificError(_ bad: BadValue) {
        let scratch = ConfigScratch()
        let problems = scratch.problems(bad.yaml)
        #expect(problems.count == 1)
        #expect(problems.first?.file == scratch.configPath)
        #expect(problems.first?.key == bad.key)
        #expect(problems.first?.line == bad.line)
        #expect(problems.first?.reason == bad.reason)
    }
}
