import BLEPayload
import BeacondTestSupport
import CircuitState
import Foundation
import Logging
import Testing

@testable import BeacondClient
@testable import BeacondCore

@Suite struct ConfigOverrideAndReloadTests {
    static let second: Int64 = 1_000_000

    static let file = """
        scanner:
          adapter: hci1
        remote:
          url: http://127.0.0.1:8080/state
          poll_interval: 10
        fusion:
          policy: safety
          min_rssi: -80
          zones: [1, 2]
        socket:
          path: /run/beacond/a.sock
        log:
          level: notice
        """

    @Test func flagsOverrideTheFileAndLeaveTheRest() throws {
        let scratch = ConfigScratch()
        let overrides = DaemonOverrides(
            adapter: "hci2", companyID: "0x00AB", pollInterval: "2.5", policy: "most-severe", minRSSI: "-60",
            zones: "3,4", socket: "/tmp/b.sock", stateDir: "/tmp/state", record: "/tmp/rec.pcap", logLevel: "debug")
        let configuration = try scratch.load(Self.file, overrides: overrides)
        #expect(configuration.scanner.adapters == .named(["hci2"]))
        #expect(configuration.scanner.companyID == 0xAB)
        #expect(configuration.remote.pollInterval == 2_500_000)
        #expect(configuration.fusion.policy == .mostSevere)
        #expect(configuration.fusion.minRSSI == -60)
        #expect(configuration.fusion.zones == [3, 4])
        #expect(configuration.socket.path == "/tmp/b.sock")
        #expect(configuration.stateDir == "/tmp/state")
        #expect(configuration.record.path == "/tmp/rec.pcap")
        #expect(configuration.log.level == .debug)
        // Not overridden: the file's values.
        #expect(configuration.remote.url == "http://127.0.0.1:8080/state")
        // Not in the file either: defaults.
        #expect(configuration.remote.timeout == 3 * Self.second)
    }

    @Test func everyFlagMapsToItsKey() throws {
        let scratch = ConfigScratch()
        let capture = scratch.write("c.pcap", "x")
        let overrides = DaemonOverrides(
            backend: "replay", adapter: "hci3", companyID: "17", replay: capture, speed: "max", loop: true,
            remoteURL: "file:///tmp/state.json", pollInterval: "1", timeout: "0.5", staleAfter: "7",
            policy: "beacon-first", minRSSI: "-100", zones: "9", socket: "/tmp/x.sock", stateDir: "/tmp/s",
            record: "/tmp/r", logLevel: "trace", active: true, scanIntervalMs: "200", scanWindowMs: "50",
            recordMaxMB: "7", recordKeep: "2", deescalationHold: "2.5", metrics: "127.0.0.1:9464",
            mqttURL: "mqtt://127.0.0.1", mqttNode: "kiosk-1", keyFile: "/etc/beacond/venue.keys", unsigned: "reject",
            clockWindow: "12")
        #expect(Set(overrides.values.map(\.key)) == Set(ConfigKey.allCases.filter { $0.flag != nil }))
        for (key, _) in overrides.values {
            #expect(ConfigKey.forFlag(key.flag!) == key)
        }
        let configuration = try overrides.applied(to: DaemonConfiguration())
        #expect(configuration.scanner.backend == .replay)
        #expect(configuration.scanner.replay == capture)
        #expect(configuration.scanner.speed == .max)
        #expect(configuration.scanner.loop)
        #expect(configuration.scanner.companyID == 17)
        #expect(configuration.remote.url == "file:///tmp/state.json")
        #expect(configuration.remote.timeout == 500_000)
        #expect(configuration.remote.staleAfter == 7 * Self.second)
        #expect(configuration.fusion.policy == .beaconFirst)
        #expect(configuration.security.keyFile == "/etc/beacond/venue.keys")
        #expect(configuration.fusionConfiguration().unsignedFrames == .reject)
        #expect(configuration.security.clockWindow == 12 * Self.second)
        #expect(configuration.log.level == .trace)
        #expect(configuration.describe(.scannerCompanyID) == "0x11")
        #expect(configuration.scanner.active)
        #expect(configuration.scanner.scanIntervalMs == 200)
        #expect(configuration.scanner.scanWindowMs == 50)
        #expect(configuration.record.maxMB == 7)
        #expect(configuration.record.keep == 2)
        #expect(configuration.describe(.metricsListen) == "127.0.0.1:9464")
    }

    @Test func aScanWindowLongerThanTheIntervalIsRefused() {
        #expect {
            try DaemonOverrides(scanIntervalMs: "50", scanWindowMs: "60").applied(to: DaemonConfiguration())
        } throws: { error in
            "\(error)".contains(
                """
                --scan-window-ms (scanner.scan_window_ms): the scan window (60 ms) is longer than the scan \
                interval (50 ms
                """
            )
        }
    }

    @Test func flagNamesDocumentedInTheIssueAllExist() {
        let flags = [
            "--backend", "--adapter", "--replay", "--speed", "--loop", "--remote-url", "--poll-interval",
            "--timeout", "--stale-after", "--policy", "--min-rssi", "--zones", "--socket", "--state-dir",
            "--record", "--log-level", "--company-id",
            // The live-scanning issue's.
            "--active", "--scan-interval-ms", "--scan-window-ms", "--record-max-mb", "--record-keep",
            // Issue 9's.
            "--deescalation-hold",
            // Issue 13's.
            "--metrics",
            // Issue 16's.
            "--mqtt-url", "--mqtt-node",
            // Issue 29's.
            "--key-file", "--unsigned", "--clock-window",
        ]
        #expect(Set(flags) == Set(ConfigKey.allCases.compactMap(\.flag)))
        #expect(ConfigKey.forFlag("--socket") == .socketPath)
        #expect(ConfigKey.forFlag("--record") == .recordPath)
        #expect(ConfigKey.forFlag("--remote-url") == .remoteURL)
    }

    @Test func badFlagNamesTheFlagAndKey() {
        do {
            _ = try DaemonOverrides(policy: "safest", minRSSI: "-300").applied(to: DaemonConfiguration())
            Issue.record("accepted bad flags")
        } catch {
            #expect(error.problems.map(\.flag) == ["--policy", "--min-rssi"])
            #expect(error.problems.map(\.key) == ["fusion.policy", "fusion.min_rssi"])
            #expect(error.problems.allSatisfy { $0.file == nil && $0.line == nil })
            #expect(
                error.description == """
                    --policy (fusion.policy): unknown policy "safest" (expected safety, beacon-first or most-severe)
                    --min-rssi (fusion.min_rssi): must be between -127 and 20, found -300
                    """)
        }
    }

    @Test func flagCompletesTheFile() throws {
        // The file asks for replay and the flag supplies the capture: checked together, not apart.
        let scratch = ConfigScratch()
        let capture = scratch.write("c.btsnoop", "x")
        let configuration = try scratch.load(
            "scanner:\n  backend: replay\n", overrides: DaemonOverrides(replay: capture))
        #expect(configuration.scanner.replay == capture)
        let problems = scratch.problems("scanner:\n  adapter: hci0\n", overrides: DaemonOverrides(backend: "replay"))
        #expect(problems.first?.flag == "--backend")
        #expect(problems.first?.key == "scanner.replay")
    }

    @Test func flagsBeatTheFileOnlyWhereGiven() throws {
        let scratch = ConfigScratch()
        let configuration = try scratch.load("scanner:\n  loop: true\n", overrides: DaemonOverrides(loop: nil))
        #expect(configuration.scanner.loop == true)
        let overridden = try scratch.load("scanner:\n  loop: true\n", overrides: DaemonOverrides(loop: false))
        #expect(overridden.scanner.loop == false)
    }

    @Test func identicalConfigurationsPlanNothing() throws {
        let scratch = ConfigScratch()
        let running = try scratch.load(Self.file)
        let plan = try scratch.load(Self.file).reloadPlan(from: running)
        #expect(plan.isEmpty)
        #expect(plan.summary == nil)
        #expect(plan.configuration == running)
    }

    @Test func reloadAppliesLiveKeysAndKeepsRestartKeys() throws {
        let scratch = ConfigScratch()
        let running = try scratch.load(Self.file)
        let changed = try scratch.load(
            """
            scanner:
              adapter: hci9
              backend: bluez
            remote:
              url: http://127.0.0.1:9090/state
              poll_interval: 10
              stale_after: 30
            fusion:
              policy: most-severe
              min_rssi: -70
              zones: [3]
              max_ttl: 60
              allow: ["AA:BB:CC:DD:EE:FF"]
              max_entries: 100
            socket:
              path: /run/beacond/b.sock
              max_clients: 10
            state_dir: /var/lib/other
            log:
              level: debug
            """)
        let plan = changed.reloadPlan(from: running)
        #expect(
            plan.applied.map(\.key) == [
                .remoteURL, .remoteStaleAfter, .fusionPolicy, .fusionMinRSSI, .fusionZones, .fusionMaxTTL, .fusionAllow,
                .logLevel,
            ])
        #expect(
            plan.needsRestart.map(\.key) == [
                .scannerBackend, .scannerAdapter, .fusionMaxEntries, .socketPath, .socketMaxClients, .stateDir,
            ])
        let effective = plan.configuration
        #expect(effective.fusion.policy == .mostSevere)
        #expect(effective.fusion.zones == [3])
        #expect(effective.remote.url == "http://127.0.0.1:9090/state")
        #expect(effective.remote.staleAfter == 30 * Self.second)
        #expect(effective.log.level == .debug)
        #expect(effective.scanner.backend == .hci)
        #expect(effective.scanner.adapters == .named(["hci1"]))
        #expect(effective.socket.path == "/run/beacond/a.sock")
        #expect(effective.socket.maxClients == 1024)
        #expect(effective.fusion.maxEntries == 4096)
        #expect(effective.stateDir == "/var/lib/beacond")
        #expect(plan.fusionChanged)
        #expect(plan.remoteChanged)
        #expect(plan.logLevelChanged)
        #expect(
            plan.needsRestart.first { $0.key == .socketPath }?.description
                == "socket.path: /run/beacond/a.sock -> /run/beacond/b.sock")
        #expect(
            plan.summary?.contains("applied remote.url: http://127.0.0.1:8080/state -> http://127.0.0.1:9090/state")
                == true)
        #expect(plan.summary?.contains("needs restart (running values kept) scanner.backend: hci -> bluez") == true)
    }

    @Test func staleAfterAloneChangesFusionNotThePoller() throws {
        let scratch = ConfigScratch()
        let running = try scratch.load(Self.file)
        var changed = running
        changed.remote.staleAfter = 99 * Self.second
        let plan = changed.reloadPlan(from: running)
        #expect(plan.applied.map(\.key) == [.remoteStaleAfter])
        #expect(plan.fusionChanged)
        #expect(!plan.remoteChanged)
        #expect(!plan.logLevelChanged)
        #expect(plan.configuration.fusionConfiguration().staleAfter == 99 * Self.second)
    }

    @Test func restartOnlyChangesLeaveTheRunningConfiguration() throws {
        var changed = DaemonConfiguration()
        changed.scanner.adapters = .named(["hci7"])
        changed.scanner.speed = .max
        let plan = changed.reloadPlan(from: DaemonConfiguration())
        #expect(plan.applied.isEmpty)
        #expect(plan.needsRestart.map(\.key) == [.scannerAdapter, .scannerSpeed])
        #expect(plan.configuration == DaemonConfiguration())
        #expect(!plan.fusionChanged && !plan.remoteChanged)
    }

    @Test func reloadOfABrokenFileThrowsAndFlagsStillWin() throws {
        let scratch = ConfigScratch()
        let path = scratch.write("beacond.yaml", Self.file)
        let overrides = DaemonOverrides(policy: "beacon-first")
        let running = try DaemonConfiguration.load(path: path, overrides: overrides)
        #expect(running.fusion.policy == .beaconFirst)

        scratch.write("beacond.yaml", Self.file + "\nfusion_typo: 1\n")
        do {
            _ = try DaemonConfiguration.reload(path: path, overrides: overrides, current: running)
            Issue.record("reloaded a broken file")
        } catch {
            #expect(error.problems.map(\.key) == ["fusion_typo"])
            #expect(error.problems.first?.file == path)
        }

        scratch.write(
            "beacond.yaml",
            Self.file.replacingOccurrences(of: "policy: safety", with: "policy: most-severe")
                .replacingOccurrences(of: "min_rssi: -80", with: "min_rssi: -85"))
        let plan = try DaemonConfiguration.reload(path: path, overrides: overrides, current: running)
        // The flag still decides the policy; the file's new min_rssi applies.
        #expect(plan.applied.map(\.key) == [.fusionMinRSSI])
        #expect(plan.configuration.fusion.policy == .beaconFirst)
        #expect(plan.configuration.fusion.minRSSI == -85)
    }

    @Test func reloadClassesMatchTheIssue() {
        let live: Set<ConfigKey> = [
            .fusionPolicy, .fusionZones, .fusionMinRSSI, .remoteStaleAfter, .fusionMaxTTL,
            .fusionAllow, .remoteURL, .remotePollInterval, .remoteTimeout, .remoteCAFile,
            .remoteBearerTokenFile,
        ]
        for key in live { #expect(key.isLiveReloadable, "\(key.rawValue)") }
        for key in [ConfigKey.scannerBackend, .scannerAdapter, .socketPath] {
            #expect(!key.isLiveReloadable, "\(key.rawValue)")
        }
    }
}
