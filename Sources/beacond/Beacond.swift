import ArgumentParser

@main
struct Beacond: ParsableCommand {
    static let version = "0.1.0"

    static let configuration = CommandConfiguration(
        commandName: "beacond",
        abstract: "GeoRacing track-status daemon: scans BLE beacons, fuses them with race control, publishes the track mode.",
        version: version,
        subcommands: [ReplayCommand.self, ExampleCaptureCommand.self]
    )
}
