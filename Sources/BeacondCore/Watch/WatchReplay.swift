import BLEPayload
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization

/// `beacond watch --replay FILE --speed X`: the daemon's hub, publisher and replay backend run in
/// this process, on their own event loop and the capture's virtual clock, exactly as `beacond run
/// --backend replay` would run them, minus the socket server and the remote poller (race
/// control's state is not part of a capture). Staff review a recorded session with it.
///
/// Nothing is logged: the screen is the watch's.
package final class WatchReplay: FiniteWatchSource, Sendable {
    package let label: String
    private let group: MultiThreadedEventLoopGroup
    private let hub: TrackStateHub
    private let status: StatusBoard
    private let devices = NearbyDeviceTable()
    private let backend: ReplayBackend
    private let serviceGroup: ServiceGroup
    private let failure = Shared<String?>(nil)
    private let running = Shared<Task<Void, Never>?>(nil)

    /// Builds the pipeline for `configuration` (`scanner.replay` is the capture, `scanner.speed`
    /// its speed; fusion settings and zone names apply as in the daemon). Throws when the
    /// capture cannot be opened or its header read.
    package init(configuration: DaemonConfiguration) throws(WatchSourceError) {
        let scanner = configuration.scanner
        guard let capture = scanner.replay else { throw WatchSourceError("--replay needs a capture file") }
        let start: Int64
        do {
            start = try ReplayBackend.firstTimestamp(of: capture) ?? MonotonicClock.wallMicros()
        } catch {
            throw WatchSourceError("cannot replay: \(error)")
        }
        let speed: ReplayClock.Speed =
            switch scanner.speed {
            case .max: .maximum
            case .factor(let millionths): .factor(Double(millionths) / 1_000_000)
            }
        label = "replay \(capture) at \(scanner.speed)" + (speed == .maximum ? " speed" : "×")
        let clock = ReplayClock(start: start, speed: speed)
        let logger = Logger(label: "beacond.watch") { _ in SwiftLogNoOpLogHandler() }
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        hub = TrackStateHub(
            eventLoop: group.next(), configuration: configuration.fusionConfiguration(),
            zoneNames: configuration.zones.names, clock: clock, backend: ScannerBackend.replay.rawValue,
            logger: logger)
        status = StatusBoard(hub: hub)
        status.add(devices)
        backend = ReplayBackend(
            path: capture, clock: clock, loop: false, decoder: GeoRacingDecoder(companyID: scanner.companyID),
            devices: devices, hub: hub, logger: logger)
        serviceGroup = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: [TrackStateHubService(hub: hub), backend], logger: logger))
    }

    /// Starts the hub and the replay.
    package func start() async {
        let hub = hub
        try? await hub.eventLoop.submit { hub.start() }.get()
        let serviceGroup = serviceGroup
        let failure = failure
        let task = Task {
            do {
                try await serviceGroup.run()
            } catch {
                failure.value.withLock { $0 = "\(error)" }
            }
        }
        running.value.withLock { $0 = task }
    }

    /// Why the replay stopped early (a capture that cannot be read further); nil otherwise.
    package var failed: String? { failure.value.withLock { $0 } }

    /// Stops the replay and the hub's event loop.
    package func stop() async {
        await serviceGroup.triggerGracefulShutdown()
        let task = running.value.withLock { $0 }
        await task?.value
        try? await group.shutdownGracefully()
    }

    package func fetch(devices: Bool) throws(WatchSourceError) -> StatusMessage {
        let status = status
        do {
            return try hub.eventLoop.submit { status.message(devices: devices) }.wait()
        } catch {
            throw WatchSourceError("the replay stopped: \(error)")
        }
    }

    package func close() {}
}

/// A value behind a lock, shareable by reference (a `Mutex` itself cannot be captured).
private final class Shared<Value: Sendable>: Sendable {
    let value: Mutex<Value>

    init(_ value: Value) {
        self.value = Mutex(value)
    }
}
