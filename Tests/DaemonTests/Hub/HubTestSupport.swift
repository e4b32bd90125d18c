import CircuitState
import Logging
import NIOCore

@testable import BeacondClient
@testable import BeacondCore

extension TrackStateHub {
    /// A hub with the default fusion settings on `loop`, timed by `clock`, as most tests want one.
    convenience init(testingOn loop: any EventLoop, clock: any EngineClock) {
        self.init(
            eventLoop: loop, configuration: FusionConfiguration(), clock: clock, backend: "test",
            logger: Logger(label: "test"))
    }

    /// Polls `condition` on the hub's loop every 5 ms until it holds (true) or `seconds` pass
    /// (false), without blocking the task's thread: for hubs fed by scanner threads.
    func eventually(within seconds: Double = 20, _ condition: @escaping @Sendable (TrackStateHub) -> Bool) async -> Bool
    {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            if (try? await eventLoop.submit { condition(self) }.get()) == true { return true }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return false
    }
}

extension TrackStatePublisher {
    /// A publisher connected to `hub` as its first output, as the daemon connects it.
    convenience init(connectedTo hub: TrackStateHub) {
        self.init(eventLoop: hub.eventLoop)
        hub.connect([self])
    }
}

extension StatusBoard {
    /// A board for `hub` with `publisher`'s part, as the socket server adds it.
    convenience init(hub: TrackStateHub, publisher: TrackStatePublisher) {
        self.init(hub: hub)
        add(publisher)
    }
}

/// A hub output that hands every publication to `body`: what an output hears, for tests.
final class PublicationRecorder: HubOutput {
    private let body: (Publication) -> Void

    init(_ body: @escaping (Publication) -> Void) {
        self.body = body
    }

    func receive(_ event: HubEvent) {
        if case .published(let publication) = event { body(publication) }
    }
}
