import ArgumentParser
import BeacondCore
import Dispatch
import Glibc

struct Beacond: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "beacond",
        abstract:
            "GeoRacing track-status daemon: scans BLE beacons, fuses them with race control, publishes the track mode.",
        version: BeacondVersion.current,
        subcommands: [
            RunCommand.self, ScanCommand.self, ReplayCommand.self, ExampleCaptureCommand.self, StatusCommand.self,
            KioskCommand.self, WatchCommand.self, VenueCommand.self, BeaconCommand.self, KeysCommand.self,
            ReportCommand.self,
        ]
    )
}

/// The entry point: a synchronous `main`, so `beacond run`, `kiosk` and `watch` block their signals
/// before the Swift concurrency runtime, NIO or anything else starts a thread (`DaemonSignals`);
/// then the command runs as an async task.
///
/// For those the main thread then parks on a semaphore instead of `dispatchMain()`: on Linux,
/// libdispatch parks the main thread in `sigsuspend` with an empty mask, which would unblock the
/// signals there again and let an early one kill the process. Nothing in beacond uses the main
/// queue. Other commands keep `dispatchMain()` and the default actions (Ctrl-C stops a `scan`).
@main
enum BeacondMain {
    static func main() {
        let signals = DaemonSignals.handled(byCommandIn: CommandLine.arguments)
        let daemon = !signals.isEmpty
        if daemon { DaemonSignals.block(signals) }
        Task.detached {
            await Beacond.main()
            exit(0)
        }
        if daemon {
            let never = DispatchSemaphore(value: 0)
            while true { never.wait() }
        }
        dispatchMain()
    }
}
