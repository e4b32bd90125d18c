import Testing

@testable import BeacondCore

/// The `beacon:` section's keys (docs/configuration.md, docs/beacon.md).
@Suite struct BeaconConfigTests {
    @Test func theBackendAndFrameVersionAreRead() throws {
        let scratch = ConfigScratch()
        let configuration = try scratch.load("beacon:\n  zone: 8\n  backend: bluez\n  frame_version: 1\n")
        #expect(configuration.beacon.zone == 8)
        #expect(configuration.beacon.backend == .bluez)
        #expect(configuration.beacon.frameVersion == 1)
        #expect(DaemonConfiguration().beacon.backend == .hci)
    }

    @Test func badValuesAreReportedWithTheirPlace() {
        let scratch = ConfigScratch()
        let problems = scratch.problems(
            """
            beacon:
              zone: 8
              backend: dbus
              frame_version: 3
            """)
        #expect(problems.map(\.key) == ["beacon.backend", "beacon.frame_version"])
        #expect(problems.map(\.line) == [3, 4])
        #expect(problems.first?.reason == "unknown backend \"dbus\" (expected hci or bluez)")
        #expect(problems.last?.reason == "frame version 3 is not one this beacond sends (1: GeoRacing v1)")
    }
}
