import BeacondTestSupport
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// `scanner.adapter` as one name, a list or `auto`, and `--adapter` given once per adapter
/// (issue 32).
@Suite struct ScannerAdaptersConfigTests {
    @Test func oneNameAListOrAuto() throws {
        let scratch = ConfigScratch()
        #expect(try scratch.load("scanner:\n  adapter: hci1\n").scanner.adapters == .named(["hci1"]))
        #expect(try scratch.load("scanner:\n  adapter: [hci1, hci2]\n").scanner.adapters == .named(["hci1", "hci2"]))
        #expect(
            try scratch.load("scanner:\n  adapter:\n    - hci2\n    - hci0\n").scanner.adapters
                == .named(["hci2", "hci0"]))
        #expect(try scratch.load("scanner:\n  adapter: auto\n").scanner.adapters == .auto)
        #expect(try scratch.load("scanner:\n  adapter: auto\n").describe(.scannerAdapter) == "auto")
        #expect(try scratch.load("scanner:\n  adapter: [hci1, hci2]\n").describe(.scannerAdapter) == "[hci1,hci2]")
        #expect(DaemonConfiguration().describe(.scannerAdapter) == "hci0")
    }

    @Test(arguments: [
        ("scanner:\n  adapter: [hci1, hci1]\n", "entry 2: \"hci1\" is listed twice"),
        ("scanner:\n  adapter: [hci1, auto]\n", "entry 2: auto stands alone, not in a list"),
        ("scanner:\n  adapter: []\n", "name at least one adapter, like hci0, or auto"),
        ("scanner:\n  adapter: [hci0, \"hci 1\"]\n", "entry 2: \"hci 1\" is not an adapter name like hci0"),
        (
            "scanner:\n  adapter: [hci0, hci1, hci2, hci3, hci4, hci5, hci6, hci7, hci8]\n",
            "9 adapters; one daemon scans at most 8"
        ),
    ])
    func badListsAreRefusedNamingTheEntry(yaml: String, reason: String) {
        let problems = ConfigScratch().problems(yaml)
        #expect(problems.map(\.key) == ["scanner.adapter"])
        #expect(problems.first?.reason == reason)
        #expect(problems.first?.line == 2)
    }

    @Test func theFlagGivenOncePerAdapterMakesTheList() throws {
        let overrides = DaemonOverrides([ConfigFlag(.scannerAdapter, "hci1,hci2")])
        let configuration = try overrides.applied(to: DaemonConfiguration())
        #expect(configuration.scanner.adapters == .named(["hci1", "hci2"]))
        #expect(
            try DaemonOverrides([ConfigFlag(.scannerAdapter, "auto")]).applied(to: DaemonConfiguration())
                .scanner.adapters == .auto)
    }

    @Test func aRecordingHoldsOneAdapter() {
        let problems = ConfigScratch().problems("scanner:\n  adapter: [hci1, hci2]\nrecord:\n  path: /tmp/x.btsnoop\n")
        #expect(problems.map(\.key) == ["record.path"])
        #expect(problems.first?.reason.contains("record with one adapter") == true)
        let auto = ConfigScratch().problems("scanner:\n  adapter: auto\nrecord:\n  path: /tmp/x.btsnoop\n")
        #expect(auto.map(\.key) == ["record.path"])
    }

    @Test func autoNeedsTheHCIBackend() {
        let problems = ConfigScratch().problems("scanner:\n  backend: bluez\n  adapter: auto\n")
        #expect(problems.map(\.key) == ["scanner.adapter"])
        #expect(problems.first?.reason == "auto needs the hci backend; with bluez, name the adapters: [hci0, hci1]")
    }
}
