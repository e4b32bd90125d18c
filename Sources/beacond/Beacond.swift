import ArgumentParser

@main
struct Beacond: AsyncParsableCommand {
    static let version = "0.1.0"

    static let configuration = CommandConfiguration(
        commandName: "beacond",
        abstract: "GeoRacing track-status daemon: scans BLE beacons, fuses them with race control, publishes the track mode.",
        version: version,
        subcommands: [RunCommand.self, ScanCommand.self, ReplayCommand.self, ExampleCaptureCommand.self, StatusCommand.self,
                      BenchDaemonCommand.self]
    )
}
