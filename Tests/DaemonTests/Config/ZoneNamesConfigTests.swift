import Testing

@testable import BeacondClient
@testable import BeacondCore

/// Issue 11: `zones.names`, the display names every kiosk shows for a zone.
@Suite struct ZoneNamesConfigTests {
    static func file(_ entries: String) -> String { "zones:\n  names:\n" + entries }

    @Test func aMapOfNamesLoadsTrimmed() throws {
        let scratch = ConfigScratch()
        let configuration = try scratch.load(
            Self.file("    3: \"Main grandstand\"\n    0x0C:  '  Pit lane '\n    65535: Ünïcode ✓\n    0: x\n"))
        #expect(
            configuration.zones.names.byZone == [3: "Main grandstand", 12: "Pit lane", 65535: "Ünïcode ✓", 0: "x"])
        #expect(configuration.zones.names[3] == "Main grandstand")
        #expect(configuration.zones.names[nil] == nil)
        #expect(configuration.zones.names[4] == nil)
        #expect(configuration.zones.names[zone: 70_000] == nil)
        #expect(configuration.zones.names[zone: 12] == "Pit lane")
    }

    @Test func nothingOrAnEmptyMapMeansNoNames() throws {
        let scratch = ConfigScratch()
        for yaml in ["zones:\n", "zones:\n  names:\n", "zones:\n  names: {}\n", "zones:\n  names: ~\n"] {
            #expect(try scratch.load(yaml).zones.names == ZoneNames(), "\(yaml)")
        }
    }

    /// One bad entry: the problem's key, line and reason.
    @Test(arguments: [
        ("    3: \"\"\n", "zones.names.3", 3, "the name must not be empty"),
        ("    3: '   '\n", "zones.names.3", 3, "the name must not be empty"),
        ("    3:\n", "zones.names.3", 3, "a name is required"),
        ("    4: ok\n    70000: Far\n", "zones.names.70000", 4, "zone 70000 is outside 0...65535"),
        ("    -1: Minus\n", "zones.names.-1", 3, "zone -1 is outside 0...65535"),
        ("    grandstand: Main\n", "zones.names.grandstand", 3, "expected a zone number (0–65535), found"),
        ("    3: \"Bell\\a\"\n", "zones.names.3", 3, "contains a control character"),
        ("    3: \"Tab\\tinside\"\n", "zones.names.3", 3, "contains a control character"),
        ("    3: \"Del\\x7F\"\n", "zones.names.3", 3, "contains a control character"),
        ("    3: \"C1\\u0085\"\n", "zones.names.3", 3, "contains a control character"),
        ("    3: \"Bidi\\u202Eevil\"\n", "zones.names.3", 3, "contains a control character"),
        ("    3: a\n    0x3: b\n", "zones.names.3", 4, "zone 3 is named twice"),
        ("    3: [a, b]\n", "zones.names.3", 3, "expected a name, found a list or mapping"),
        (
            "    7: " + String(repeating: "é", count: 65) + "\n", "zones.names.7", 3,
            "is 65 characters long; at most 64"
        ),
        (
            "    7: " + String(repeating: "👨‍👩‍👧", count: 20) + "\n", "zones.names.7", 3,
            "bytes of UTF-8; at most 256"
        ),
    ])
    func aBadEntryIsASpecificError(entries: String, key: String, line: Int, reason: String) throws {
        let scratch = ConfigScratch()
        let problems = scratch.problems(Self.file(entries))
        #expect(problems.count == 1)
        let problem = try #require(problems.first)
        #expect(problem.file == scratch.configPath)
        #expect(problem.key == key)
        #expect(problem.line == line)
        #expect(problem.reason.contains(reason), "\(problem.reason)")
        #expect(problem.description.hasPrefix("\(scratch.configPath):\(line):"))
        #expect(!problem.description.contains("\u{7}") && !problem.description.contains("\u{202E}"))
        #expect(ConfigurationError(problems).exitCode == 78)
    }

    @Test func sixtyFourCharactersAreEnough() throws {
        let scratch = ConfigScratch()
        let name = String(repeating: "é", count: 64)
        #expect(try scratch.load(Self.file("    7: \(name)\n")).zones.names[7] == name)
    }

    @Test func atMost1024ZonesAreNamed() throws {
        let scratch = ConfigScratch()
        let entries = { (count: Int) in (0..<count).map { "    \($0): Zone \($0)\n" }.joined() }
        #expect(try scratch.load(Self.file(entries(1024))).zones.names.count == 1024)
        let problems = scratch.problems(Self.file(entries(1025)))
        #expect(problems.count == 1)
        #expect(problems.first?.key == "zones.names")
        #expect(problems.first?.line == 3)
        #expect(problems.first?.reason == "1025 zones are named; at most 1024 may be")
    }

    @Test func namesMustBeAMapping() throws {
        let scratch = ConfigScratch()
        for (yaml, found) in [("zones:\n  names: [1, 2]\n", "a list"), ("zones:\n  names: Main\n", "\"Main\"")] {
            let problems = scratch.problems(yaml)
            #expect(problems.first?.key == "zones.names")
            #expect(problems.first?.line == 2)
            #expect(problems.first?.reason.hasSuffix("found \(found)") == true, "\(problems)")
        }
        #expect(scratch.problems("zones: 3\n").first?.reason.contains("zones.names") == true)
    }

    /// `describe` writes a YAML flow mapping; the key's parser reads it back (as flag text) exactly,
    /// quotes, backslashes and all; `copy` moves the names.
    @Test func describeAndCopyRoundTrip() throws {
        let scratch = ConfigScratch()
        let loaded = try scratch.load(
            Self.file("    12: 'Pit \"lane\" \\ é'\n    3: Main grandstand\n    9: \"a # b: c, {d}\"\n"))
        let text = loaded.describe(.zonesNames)
        #expect(text == #"{3: "Main grandstand", 9: "a # b: c, {d}", 12: "Pit \"lane\" \\ é"}"#)
        var parsed = DaemonConfiguration()
        try parsed.set(.zonesNames, to: .flag(text), relativeTo: nil)
        #expect(parsed.zones.names == loaded.zones.names)
        #expect(parsed.describe(.zonesNames) == text)
        var copied = DaemonConfiguration()
        copied.copy(.zonesNames, from: loaded)
        #expect(copied.zones.names == loaded.zones.names)
        #expect(DaemonConfiguration().describe(.zonesNames) == "{}")
    }

    /// Scalars YAML cannot hold as they are are escaped, and read back to the same text.
    @Test func describeEscapesWhatYAMLWouldNotReadBack() throws {
        let names = ZoneNames([1: "BOM\u{FEFF}in", 2: "\u{FFFE}x", 3: "plain"])
        #expect(names.description == #"{1: "BOM\uFEFFin", 2: "\uFFFEx", 3: "plain"}"#)
        let parsed = try ConfigValueParser.zoneNames(.flag(names.description))
        #expect(parsed == names)
    }

    @Test func badFlagTextIsRefusedNotTrapped() {
        for text in ["[1, 2]", "{3: }", "{70000: x}", "{&a 3: x}", "{3: \"\\a\"}", "{", "plain"] {
            #expect(throws: ConfigValueProblem.self, "\(text)") {
                try ConfigValueParser.zoneNames(.flag(text))
            }
        }
    }

    @Test func namesAreLiveAndTheReloadLineSaysWhatChanged() throws {
        #expect(ConfigKey.zonesNames.isLiveReloadable)
        #expect(ConfigKey.zonesNames.reloadEffect == .zoneNames)
        #expect(ConfigKey.zonesNames.flag == nil)
        let scratch = ConfigScratch()
        let old = try scratch.load(Self.file("    2: Pit lane\n    3: Paddock\n"))
        let new = try scratch.load(Self.file("    2: Pit straight\n    4: Paddock\n"))
        let plan = new.reloadPlan(from: old)
        #expect(plan.zoneNamesChanged)
        #expect(!plan.fusionChanged)
        #expect(plan.needsRestart.isEmpty)
        #expect(plan.configuration.zones.names == new.zones.names)
        #expect(
            plan.summary
                == #"applied zones.names: zone 2 "Pit lane" -> "Pit straight", zone 3 removed, zone 4 added "Paddock""#
        )
        #expect(!old.reloadPlan(from: old).zoneNamesChanged)
    }

    @Test func theReloadLineListsAtMostEightZones() {
        let old = ZoneNames()
        let new = ZoneNames(Dictionary(uniqueKeysWithValues: (0..<20).map { (UInt16($0), "Z\($0)") }))
        let changes = new.changes(from: old)
        #expect(changes.components(separatedBy: " added ").count == 9)
        #expect(changes.hasSuffix(", 12 more"))
    }
}
