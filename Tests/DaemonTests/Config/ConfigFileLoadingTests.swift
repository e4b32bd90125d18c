import BLEPayload
import BeacondTestSupport
import CircuitState
import Foundation
import Logging
import Testing

@testable import BeacondClient
@testable import BeacondCore

extension ConfigFileTests {
    @Test func yamlSyntaxErrorNamesFileAndLine() {
        let scratch = ConfigScratch()
        let problems = scratch.problems("fusion:\n  policy: safety\n  zones: [1, 2\nlog:\n  level: info\n")
        #expect(problems.count == 1)
        #expect(problems.first?.file == scratch.configPath)
        #expect(problems.first?.key == nil)
        #expect(problems.first?.line == 4)
        #expect(problems.first?.reason.hasPrefix("invalid YAML: ") == true)
    }

    /// Issue 26: the error points at the key to remove, the repeated one, and names the first.
    @Test func duplicateKeyIsAnErrorAtTheRepeat() {
        let problems = ConfigScratch().problems(
            "fusion:\n  policy: safety\n  # the venue's choice\n\n  \"policy\" : most-severe\nscanner: {}\n")
        #expect(problems.count == 1)
        #expect(problems.first?.reason == "duplicate key \"policy\" (first at line 2)")
        #expect(problems.first?.line == 5)
        #expect(problems.first?.column == 3)
        // The same key in a mapping nested in between is not the repeat; a flow mapping names the first.
        let nested = ConfigScratch().problems(
            "fusion:\n  policy: safety\n  extra:\n    policy: safety\n  policy: safety\n")
        #expect(nested.first?.line == 5)
        let flow = ConfigScratch().problems("fusion: {policy: safety, policy: safety}\n")
        #expect(flow.first?.reason == "duplicate key \"policy\" in one mapping")
        #expect(flow.first?.line == 1)
    }

    @Test func topLevelMustBeAMapping() {
        let problems = ConfigScratch().problems("- scanner\n- fusion\n")
        #expect(problems.first?.reason == "expected a mapping of keys at the top level (like `fusion:` and `scanner:`)")
    }

    @Test func missingFileIsAnError() {
        do {
            _ = try DaemonConfiguration.load(path: "/nonexistent/beacond.yaml")
            Issue.record("loaded a missing file")
        } catch {
            #expect(error.description == "/nonexistent/beacond.yaml: cannot open: No such file or directory")
        }
    }

    @Test func defaultPathIsUsedOnlyWhenPresent() {
        let scratch = ConfigScratch()
        let path = scratch.write("beacond.yaml", "")
        #expect(DaemonConfiguration.defaultPathIfPresent(path) == path)
        #expect(DaemonConfiguration.defaultPathIfPresent(scratch.directory + "/absent.yaml") == nil)
    }

    @Test func replayBackendNeedsACapture() {
        let scratch = ConfigScratch()
        let problems = scratch.problems("scanner:\n  backend: replay\n")
        #expect(problems.count == 1)
        #expect(problems.first?.key == "scanner.replay")
        #expect(problems.first?.file == scratch.configPath)
        #expect(problems.first?.line == 2)
        #expect(problems.first?.reason == "scanner.replay (--replay) is required when scanner.backend is replay")
        let missing = scratch.problems("scanner:\n  backend: replay\n  replay: gone.btsnoop\n")
        #expect(missing.first?.key == "scanner.replay")
        #expect(missing.first?.line == 3)
        #expect(
            missing.first?.reason
                == "cannot read \"\(scratch.directory)/gone.btsnoop\": No such file or directory")
    }

    @Test func fusionConfigurationCarriesTheFusionKeys() throws {
        let configuration = try ConfigScratch().load(
            """
            remote:
              stale_after: 9
            fusion:
              policy: most-severe
              min_rssi: -70
              zones: [4]
              max_ttl: 30
              allow: [7]
              max_distance_m: 20
              max_entries: 99
            """)
        let fusion = configuration.fusionConfiguration()
        #expect(
            fusion
                == FusionConfiguration(
                    policy: .mostSevere, minRSSI: -70, zones: [4], allow: AllowList(sourceIDs: [7]),
                    maxTTL: 30 * Self.second,
                    maxEntries: 99, staleAfter: 9 * Self.second, maxDistance: 20))
    }

    @Test func replaySpeedScalesTimeBothWays() {
        let speed = ReplaySpeed.factor(millionths: 2_500_000)
        #expect(speed.virtualMicros(forReal: 1_000_000) == 2_500_000)
        #expect(speed.realMicros(forVirtual: 5_000_000) == 2_000_000)
        #expect(ReplaySpeed.factor(millionths: 500_000).realMicros(forVirtual: 3) == 6)
        #expect(ReplaySpeed.max.virtualMicros(forReal: 1) == nil)
        #expect(ReplaySpeed.max.realMicros(forVirtual: 1) == nil)
        let fastest = ReplaySpeed.factor(millionths: ReplaySpeed.maxFactorMillionths)
        #expect(fastest.virtualMicros(forReal: .max) == .max)
        #expect(fastest.virtualMicros(forReal: 3_600 * Self.second) == 36_000_000 * Self.second)
        #expect(ReplaySpeed.factor(millionths: 1).realMicros(forVirtual: .max) == .max)
        #expect(speed.description == "2.5")
    }

    @Test func shippedExampleLoadsAndShowsEveryKey() throws {
        let path = RepositoryPaths.root.path + "/systemd/beacond.yaml"
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(try DaemonConfiguration.load(path: path) == DaemonConfiguration())
        // Every key appears, commented out, in its section.
        var section = ""
        var shown = Set<String>()
        for line in text.split(separator: "\n") {
            if let first = line.first, first != " " && first != "#", line.hasSuffix(":") {
                section = String(line.dropLast())
                continue
            }
            let trimmed = line.drop { $0 == " " }
            guard trimmed.hasPrefix("# "), let colon = trimmed.firstIndex(of: ":") else { continue }
            let name = trimmed[trimmed.index(trimmed.startIndex, offsetBy: 2)..<colon]
            let indented = line.first == " "
            shown.insert(indented ? section + "." + name : String(name))
        }
        for key in ConfigKey.allCases {
            #expect(shown.contains(key.rawValue), "systemd/beacond.yaml does not show \(key.rawValue)")
        }
    }

    @Test func documentationListsEveryKeyAndFlag() throws {
        let text = try String(contentsOfFile: RepositoryPaths.root.path + "/docs/configuration.md", encoding: .utf8)
        for key in ConfigKey.allCases {
            let row = text.split(separator: "\n").first { $0.hasPrefix("| `\(key.rawValue)`") }
            #expect(row != nil, "docs/configuration.md has no row for \(key.rawValue)")
            if let row, let flag = key.flag { #expect(row.contains("`\(flag)`"), "\(key.rawValue) row lacks \(flag)") }
            if let row {
                #expect(
                    row.contains(key.isLiveReloadable ? "| live |" : "| restart |"),
                    "\(key.rawValue) row has the wrong reload class")
            }
        }
    }
}
