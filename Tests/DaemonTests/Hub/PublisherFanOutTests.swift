import BLEPayload
import CircuitState
import Logging
import NIOCore
import NIOEmbedded
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// The publisher's two-pass fan-out: every subscriber that takes the line directly gets it
/// before any backed-up one is handed it through its queue.
@Suite struct PublisherFanOutTests {
    /// Logs each delivery as "name direct seq" or "name queued seq" into a shared log.
    final class PassSubscriber: TrackStateSubscriber {
        let name: String
        /// Whether `deliverDirectly` takes the line (an idle client) or not (a backed-up one).
        var takesDirectly: Bool
        let log: Log
        var wantsBeacons: Bool { false }

        final class Log {
            var entries: [String] = []
        }

        init(_ name: String, takesDirectly: Bool, log: Log) {
            self.name = name
            self.takesDirectly = takesDirectly
            self.log = log
        }

        func deliver(state line: ByteBuffer) {
            if deliverDirectly(state: line) { return }
            deliverQueued(state: line)
        }

        func deliverDirectly(state line: ByteBuffer) -> Bool {
            guard takesDirectly else { return false }
            log.entries.append("\(name) direct \(Self.seq(line))")
            return true
        }

        func deliverQueued(state line: ByteBuffer) { log.entries.append("\(name) queued \(Self.seq(line))") }
        func deliver(beacon line: ByteBuffer) {}

        static func seq(_ line: ByteBuffer) -> Int {
            let object = RecordingSubscriber.object(line)
            return object["seq"] as? Int ?? -1
        }
    }

    func makeHub() -> (TrackStateHub, TrackStatePublisher, ManualClock) {
        let loop = EmbeddedEventLoop()
        let clock = ManualClock(1_000 * 1_000_000)
        let hub = TrackStateHub(
            eventLoop: loop, configuration: FusionConfiguration(deescalationHold: 0), clock: clock, backend: "test",
            logger: Logger(label: "test"))
        let publisher = TrackStatePublisher(connectedTo: hub)
        hub.start(checkClockEvery: nil)
        return (hub, publisher, clock)
    }

    func change(_ hub: TrackStateHub, mode: GeoRacingMode, sequence: UInt16) {
        hub.ingest(
            .circuit(zone: 7, mode: mode, sequence: sequence), address: BluetoothAddress(rawValue: 0x42), rssi: -60,
            txPower: nil)
    }

    @Test func idleSubscribersGetTheLineBeforeAnyBackedUpOne() {
        let (hub, publisher, _) = makeHub()
        let log = PassSubscriber.Log()
        let first = PassSubscriber("a", takesDirectly: true, log: log)
        let backedUp = PassSubscriber("q", takesDirectly: false, log: log)
        let last = PassSubscriber("b", takesDirectly: true, log: log)
        for subscriber in [first, backedUp, last] { publisher.subscribe(subscriber) }
        change(hub, mode: .redFlag, sequence: 1)
        #expect(log.entries == ["a direct 2", "b direct 2", "q queued 2"])

        // The backed-up client caught up: the next line goes to it directly, in subscription order.
        log.entries = []
        backedUp.takesDirectly = true
        change(hub, mode: .evacuation, sequence: 2)
        #expect(log.entries == ["a direct 3", "q direct 3", "b direct 3"])
        hub.stop()
    }

    @Test func unsubscribedSubscribersGetNothingAndTheOthersExactlyOneLine() {
        let (hub, publisher, _) = makeHub()
        let log = PassSubscriber.Log()
        let subscribers = ["a", "b", "c", "d"].map { PassSubscriber($0, takesDirectly: true, log: log) }
        for subscriber in subscribers { publisher.subscribe(subscriber) }
        // Subscribing again changes nothing; unsubscribing one never subscribed is harmless.
        publisher.subscribe(subscribers[1])
        publisher.unsubscribe(PassSubscriber("x", takesDirectly: true, log: log))
        #expect(publisher.subscriberCount == 4)
        publisher.unsubscribe(subscribers[0])
        publisher.unsubscribe(subscribers[2])
        #expect(publisher.subscriberCount == 2)
        change(hub, mode: .redFlag, sequence: 1)
        #expect(log.entries.sorted() == ["b direct 2", "d direct 2"])

        log.entries = []
        publisher.unsubscribe(subscribers[3])
        publisher.subscribe(subscribers[0])
        change(hub, mode: .evacuation, sequence: 2)
        #expect(log.entries.sorted() == ["a direct 3", "b direct 3"])
        publisher.unsubscribe(subscribers[0])
        publisher.unsubscribe(subscribers[1])
        #expect(publisher.subscriberCount == 0)
        log.entries = []
        change(hub, mode: .redFlag, sequence: 3)
        #expect(log.entries.isEmpty)
        hub.stop()
    }
}
