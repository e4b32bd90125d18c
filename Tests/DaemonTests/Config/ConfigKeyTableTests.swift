import ArgumentParser
import Foundation
import Testing

@testable import BeacondClient
@testable import BeacondCore
@testable import beacond

/// Issue 10, item 5: each key is declared once, in the key table (`ConfigKey.spec`), and `set`,
/// `describe`, `copy`, the overrides and the commands' flags all derive from it.
@Suite struct ConfigKeyTableTests {
    /// A file that gives every key a value other than its default.
    static func everyKeyFile(_ scratch: ConfigScratch) -> String {
        let capture = scratch.write("c.btsnoop", "x")
        let ca = scratch.write("ca.pem", "x")
        let token = scratch.write("token", "t")
        return """
            scanner:
              backend: replay
              adapter: hci3
              company_id: 0x00AB
              replay: \(capture)
              speed: 2.5
              loop: true
              silence_restart_s: 0
              active: true
              kernel_filter: false
              scan_interval_ms: 200
              scan_window_ms: 50
              bluez_refresh_s: 2
            remote:
              url: https://race.example/state
              poll_interval: 1.5
              timeout: 0.5
              stale_after: 7
              ca_file: \(ca)
              bearer_token_file: \(token)
            fusion:
              policy: most-severe
              min_rssi: -70
              zones: [3, 1]
              max_ttl: 30
              deescalation_hold: 2.5
              allow: [AA:BB:CC:DD:EE:FF, 7]
              max_distance_m: 25.5
              p1m_dbm: -61.5
              max_entries: 99
              command_frames: report
            socket:
              path: /tmp/t.sock
              max_clients: 9
            state_dir: /tmp/state
            log:
              level: debug
            record:
              path: /tmp/rec.btsnoop
              max_mb: 7
              keep: 2
            zones:
              names:
                3: "Main grandstand"
                0x0C: '  Pit "lane" \\ é  '
            metrics:
              listen: "127.0.0.2:9100"
            mqtt:
              url: mqtts://broker.example:8884
              node: kiosk-9
              client_id: kiosk-9-id
              username: beacond
              password_file: \(token)
              ca_file: \(ca)
              topic_prefix: venue/gr
              qos_state: 2
            beacon:
              zone: 7
              backend: bluez
              frame_version: both
              source_id: 31
              adapter: hci2
              interval: 0.5
              heartbeat_url: https://panel.venue/api/beacons/heartbeat
              heartbeat_ca_file: \(ca)
              uid: kiosk-7
            security:
              key_file: \(token)
              unsigned: reject
              clock_window: 12
            kiosk:
              languages: [es, en]
              language_period: 6
              language_dir: /tmp/languages
              exit:
                direction: up_right
                name: "Puerta 3 / Gate 3"
                distance_m: 120
              speak: true
              speak_repeat: 30
              audio_device: "plughw:CARD=USB,DEV=0"

            """
    }

    /// `everyKeyFile` as the daemon reads it, with the `kiosk.*` keys as a kiosk reads them: each
    /// program sets only its own keys.
    static func everyKeyConfiguration(_ scratch: ConfigScratch) throws -> DaemonConfiguration {
        let path = scratch.write("every.yaml", everyKeyFile(scratch))
        var configuration = try DaemonConfiguration.load(path: path)
        #expect(configuration.kiosk == KioskSettings(), "the daemon reads no kiosk key")
        configuration.kiosk = try KioskSettings.load(path: path)
        return configuration
    }

    @Test func everyKeyIsInTheFileAndDiffersFromItsDefault() throws {
        let scratch = ConfigScratch()
        let configuration = try Self.everyKeyConfiguration(scratch)
        let defaults = DaemonConfiguration()
        for key in ConfigKey.allCases {
            #expect(configuration.describe(key) != defaults.describe(key), "\(key.rawValue)")
        }
    }

    /// Each row's `copy` moves its own field and no other, and `describe` reads that same field.
    @Test func copyMovesExactlyItsKey() throws {
        let scratch = ConfigScratch()
        let other = try Self.everyKeyConfiguration(scratch)
        let defaults = DaemonConfiguration()
        for key in ConfigKey.allCases {
            var copied = DaemonConfiguration()
            copied.copy(key, from: other)
            for probe in ConfigKey.allCases {
                let expected = probe == key ? other.describe(probe) : defaults.describe(probe)
                #expect(copied.describe(probe) == expected, "copy \(key.rawValue), describe \(probe.rawValue)")
            }
        }
    }

    /// What `describe` writes, the key's parser reads back to the same value: defaults and set values.
    @Test func describeRoundTripsThroughTheParser() throws {
        let scratch = ConfigScratch()
        for source in [DaemonConfiguration(), try Self.everyKeyConfiguration(scratch)] {
            for key in ConfigKey.allCases {
                let text = source.describe(key)
                // Lists are described `[1,3]`; as flag text they are `1,3`.
                let flagText = text.hasPrefix("[") ? String(text.dropFirst().dropLast()) : text
                let raw: RawConfigValue = text == "~" ? RawConfigValue(.null) : .flag(flagText)
                var parsed = DaemonConfiguration()
                try parsed.set(key, to: raw, relativeTo: nil)
                #expect(parsed.describe(key) == text, "\(key.rawValue)")
            }
        }
    }

    @Test func reloadEffectsFollowTheReloadClass() {
        for key in ConfigKey.allCases {
            #expect(key.isLiveReloadable == !key.reloadEffect.isEmpty, "\(key.rawValue)")
        }
        #expect(ConfigKey.remoteStaleAfter.reloadEffect == .fusion)
        #expect(ConfigKey.remoteURL.reloadEffect == .remote)
        #expect(ConfigKey.logLevel.reloadEffect == .logging)
        #expect(ConfigKey.fusionMaxEntries.reloadEffect.isEmpty)
    }

    // MARK: the commands' flags come from the table

    /// Every flag in the table is a `run` option that overrides exactly its key.
    @Test(arguments: ConfigKey.allCases.filter { $0.flag != nil })
    func everyTableFlagIsARunOption(key: ConfigKey) throws {
        let flag = try #require(key.flag)
        let arguments = key.flagIsSwitch ? [flag] : [flag, "some-text"]
        let command = try RunCommand.parse(arguments)
        #expect(command.overrides.values.map(\.key) == [key])
        #expect(command.overrides[key] == (key.flagIsSwitch ? "true" : "some-text"))
    }

    @Test func runWithoutFlagsOverridesNothing() throws {
        #expect(try RunCommand.parse([]).overrides.values.isEmpty)
        #expect(try RunCommand.parse(["--config", "/x.yaml"]).overrides.values.isEmpty)
    }

    @Test func scanTakesTheScannerFlagsFromTheTable() throws {
        let command = try ScanCommand.parse(["--adapter", "hci7", "--active", "--record-keep", "3"])
        #expect(
            DaemonOverrides(command.scanner.flags).values.map(\.key)
                == [.scannerAdapter, .scannerActive, .recordKeep])
    }

    @Test func aFlagsHelpNamesItsKey() {
        let help = RunCommand.helpMessage(columns: 400)
        for key in ConfigKey.allCases where key.flag != nil {
            #expect(help.contains("(\(key.rawValue))."), "\(key.rawValue)")
        }
    }
}
