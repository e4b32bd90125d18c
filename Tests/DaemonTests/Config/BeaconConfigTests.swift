import Testing

@testable import BeacondCore

/// The `beacon:` section's keys (docs/configuration.md, docs/beacon.md).
@Suite struct BeaconConfigTests {
    @Test func theBackendAndFrameVersionAreRead() throws {
        let scratch = ConfigScratch()
        let configuration = try scratch.load("beacon:\n  zone: 8\n  backend: bluez\n  frame_version: 1\n")
        #expect(configuration.beacon.zone == 8)
        #expect(configuration.beacon.backend == .bluez)
        #expect(configuration.beacon.frameVersion == .v1)
        #expect(configuration.beacon.sourceID == nil)
        #expect(DaemonConfiguration().beacon.backend == .hci)
        #expect(DaemonConfiguration().beacon.frameVersion == .v1)
    }

    @Test(arguments: [("v1", BeaconFrameVersion.v1), ("3", .v3), ("v3", .v3), ("both", .both)])
    func everyFrameVersionIsRead(text: String, version: BeaconFrameVersion) throws {
        let scratch = ConfigScratch()
        let configuration = try scratch.load(
            "beacon:\n  zone: 8\n  frame_version: \(text)\n  source_id: 12\nsecurity:\n  key_file: /k\n")
        #expect(configuration.beacon.frameVersion == version)
        #expect(configuration.beacon.sourceID == 12)
    }

    @Test func badValuesAreReportedWithTheirPlace() {
        let scratch = ConfigScratch()
        let problems = scratch.problems(
            """
            beacon:
              zone: 8
              backend: dbus
              frame_version: 2
            """)
        #expect(problems.map(\.key) == ["beacon.backend", "beacon.frame_version"])
        #expect(problems.map(\.line) == [3, 4])
        #expect(problems.first?.reason == "unknown backend \"dbus\" (expected hci or bluez)")
        #expect(problems.last?.reason == "expected v1, v3 or both, found \"2\"")
    }

    /// A transmitter that signs needs keys: a config without them is refused, naming the key.
    @Test func signingWithoutAKeyFileIsRefused() {
        let scratch = ConfigScratch()
        let problems = scratch.problems("beacon:\n  zone: 8\n  frame_version: v3\n")
        #expect(problems.map(\.key) == ["beacon.frame_version"])
        #expect(problems.first?.line == 3)
        #expect(problems.first?.reason == "frame version v3 signs frames: it needs security.key_file")
    }
}
