import BeacondTestSupport
import Foundation
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// A config file costs bounded time and memory whatever it holds: anchors and aliases are refused
/// before Yams composes the text, and the composed tree has a node cap.
@Suite struct ConfigYAMLBoundsTests {
    static var billionLaughs: String { SharedFixtures.billionLaughs }

    @Test func billionLaughsFailsFastNamingTheFirstAnchor() {
        let scratch = ConfigScratch()
        let started = ContinuousClock.now
        let problems = scratch.problems(Self.billionLaughs)
        #expect(ContinuousClock.now - started < .seconds(1))
        #expect(problems.count == 1)
        #expect(problems.first?.line == 1)
        #expect(problems.first?.column == 4)
        #expect(
            problems.first?.reason
                == "YAML anchors (&name) are not accepted in a config file (no key needs anchors or aliases)")
        #expect(problems.first?.description.hasPrefix(scratch.directory + "/beacond.yaml:1:4: YAML anchors") == true)
    }

    /// Aliased mapping keys are hashed while Yams composes: they must never reach it.
    @Test func aliasesAsMappingKeysAreRefusedBeforeComposing() {
        let yaml = """
            x: &k [[1,1,1,1,1,1,1,1],[1,1,1,1,1,1,1,1]]
            y: {? [*k,*k,*k,*k] : 1, ? [*k,*k,*k,*k,*k] : 2}

            """
        #expect(YAMLBounds.anchorOrAlias(in: yaml, file: "f")?.line == 1)
        let alias = YAMLBounds.anchorOrAlias(in: "y: {? [*k] : 1}\n", file: "f")
        #expect(alias?.reason.contains("aliases (*name)") == true)
    }

    @Test(arguments: [
        "fusion:\n  allow: *list\n", "fusion:\n  allow: [1,*x]\n", "fusion: {allow: [*x]}\n",
        "fusion:\n  allow:\n    - *x\n", "\u{FEFF}&a fusion:\n", "\"k\":*x\n", "a: 1\r*x: 2\n",
        "a: 1\u{2028}*x: 2\n", "a: \"x #\", *b\n", "<<: *base\n", "fusion: !!map &m\n  policy: safety\n",
    ])
    func everyAnchorOrAliasPositionIsFound(yaml: String) {
        #expect(YAMLBounds.anchorOrAlias(in: yaml, file: "f") != nil, "missed in \(yaml.debugDescription)")
    }

    @Test func textThatOnlyLooksLikeAnAliasIsFine() throws {
        let scratch = ConfigScratch()
        let configuration = try scratch.load(
            """
            # *Durations* are seconds & the rest: see docs/configuration.md
            remote:
              url: "https://race.example/api?a=1&b=*2"  # &tail *comment
            fusion:
              allow: ["AA:BB:CC:DD:EE:FF", 0x2A]  # *x
            state_dir: "*literal"
            """)
        #expect(configuration.remote.url == "https://race.example/api?a=1&b=*2")
        #expect(configuration.stateDir.hasSuffix("/*literal"))
    }

    @Test func theNodeCapHoldsBeforeAnyValueIsRead() {
        let zones = Array(repeating: "1", count: YAMLBounds.maxNodes).joined(separator: ",")
        let problems = ConfigScratch().problems("fusion:\n  zones: [\(zones)]\n")
        #expect(problems.count == 1)
        #expect(problems.first?.key == nil)
        #expect(problems.first?.reason == "more than \(YAMLBounds.maxNodes) YAML nodes; a config file needs far fewer")
    }

    @Test func aBombOnReloadKeepsTheRunningConfiguration() throws {
        let scratch = ConfigScratch()
        let running = try scratch.load("fusion:\n  policy: most-severe\n")
        let path = scratch.write("beacond.yaml", Self.billionLaughs)
        let started = ContinuousClock.now
        #expect(throws: ConfigurationError.self) {
            _ = try DaemonConfiguration.reload(path: path, overrides: DaemonOverrides(), current: running)
        }
        #expect(ContinuousClock.now - started < .seconds(1))
        #expect(running.fusion.policy == .mostSevere)
    }

    @Test func unknownKeyNamesAreEscapedForTheTerminal() {
        let problems = ConfigScratch().problems("fusion:\n  \"pol\\eicy\\u0007\": safety\n")
        #expect(problems.first?.key == "fusion.pol\u{1B}icy\u{07}")
        let text = problems.first?.description ?? ""
        #expect(!text.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 })
        #expect(text.contains("fusion.pol\\u{1b}icy\\u{7}: unknown key"))
    }
}
