import BLEPayload
import BeacondTestSupport
import CircuitState
import Foundation
import Logging
import NIOCore
import NIOEmbedded
import NIOPosix
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// An engine clock the test moves by hand; timers never fire by themselves. Unchecked: a test moves
/// it only from code it runs on the hub's loop (`withHub`), or while the loop waits.
final class ManualClock: EngineClock, @unchecked Sendable {
    var time: Int64

    init(_ time: Int64) { self.time = time }

    func now() -> Int64 { time }
    func realDelay(until time: Int64) -> TimeAmount? { .hours(1) }
}

/// A test body handed to the hub's loop while the test's thread waits for it to finish
/// (`loop.submit { }.wait()`), so only one thread ever runs it.
struct HandedToLoop<Body>: @unchecked Sendable {
    let body: Body
}

/// Collects what the publisher delivers.
final class RecordingSubscriber: TrackStateSubscriber {
    var wantsBeacons: Bool
    var states: [[String: Any]] = []
    var beacons: [[String: Any]] = []

    init(wantsBeacons: Bool = false) { self.wantsBeacons = wantsBeacons }

    func deliver(state line: ByteBuffer) { states.append(Self.object(line)) }
    func deliver(beacon line: ByteBuffer) { beacons.append(Self.object(line)) }

    static func object(_ line: ByteBuffer) -> [String: Any] {
        let data = Data(line.readableBytesView)
        return (try? JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:]
    }
}

@Suite struct TrackStateHubTests {
    static let second: Int64 = 1_000_000

    /// Runs `body` on an event loop with a hub on a manual clock, and its publisher.
    func withHub(_ body: @escaping (TrackStateHub, TrackStatePublisher, ManualClock) throws -> Void) throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let loop = group.next()
        let clock = ManualClock(1_000 * Self.second)
        let hub = TrackStateHub(testingOn: loop, clock: clock)
        let publisher = TrackStatePublisher(connectedTo: hub)
        let handed = HandedToLoop(body: body)
        try loop.submit {
            hub.start(checkClockEvery: nil)
            try handed.body(hub, publisher, clock)
            hub.stop()
        }.wait()
    }

    @Test func publishesOnlyWhenAPublishedFieldChanges() throws {
        try withHub { hub, publisher, clock in
            let subscriber = RecordingSubscriber()
            publisher.subscribe(subscriber)
            #expect(hub.seq == 1)
            let red = GeoRacingSignal.circuit(zone: 3, mode: .redFlag, sequence: 1)
            hub.ingest(red, address: BluetoothAddress(rawValue: 1), rssi: -60, txPower: nil)
            clock.time += Self.second
            hub.ingest(red, address: BluetoothAddress(rawValue: 1), rssi: -61, txPower: nil)
            hub.setScanner(.up)
            #expect(subscriber.states.count == 2)
            #expect(subscriber.states.map { $0["seq"] as? Int } == [2, 3])
            let first = subscriber.states[0]
            #expect(first["type"] as? String == "state")
            #expect(first["mode"] as? String == "red_flag")
            #expect(first["source"] as? String == "beacon")
            #expect(first["zone"] as? Int == 3)
            let beacon = first["beacon"] as? [String: Any]
            #expect(beacon?["key"] as? String == "zone 3 @ 00:00:00:00:00:01")
            #expect(beacon?["ttl_left_s"] as? Double == 10)
            #expect((subscriber.states[1]["scanner"] as? [String: Any])?["state"] as? String == "up")
        }
    }

    @Test func statusListsOverridesAndHeardBeacons() throws {
        try withHub { hub, publisher, _ in
            hub.ingest(
                .circuit(zone: 1, mode: .safetyCar, sequence: 1), address: BluetoothAddress(rawValue: 1),
                rssi: -60, txPower: nil)
            hub.ingest(
                .circuit(zone: 2, mode: .redFlag, sequence: 1), address: BluetoothAddress(rawValue: 2),
                rssi: -99, txPower: nil)
            let status =
                try JSONSerialization.jsonObject(with: Data(StatusBoard(hub: hub, publisher: publisher).line()))
                as? [String: Any]
            #expect(status?["type"] as? String == "status")
            #expect((status?["overrides"] as? [Any])?.count == 1)
            let beacons = status?["beacons"] as? [[String: Any]]
            #expect(beacons?.count == 2)
            #expect(beacons?.first { $0["zone"] as? Int == 2 }?["rejected"] as? String == "rssi")
            #expect((status?["counters"] as? [String: Any])?["filtered_rssi"] as? Int == 1)
        }
    }

    @Test func beaconUpdatesAreCoalescedPerBeacon() throws {
        // On an embedded loop: the throttle runs on the loop's clock, and its timer fires when the
        // test advances that clock; the engine's own clock moves too, and the throttle ignores it.
        let loop = EmbeddedEventLoop()
        let clock = ManualClock(1_000 * Self.second)
        let hub = TrackStateHub(testingOn: loop, clock: clock)
        let publisher = TrackStatePublisher(connectedTo: hub)
        hub.start(checkClockEvery: nil)
        defer { hub.stop() }
        let subscriber = RecordingSubscriber(wantsBeacons: true)
        publisher.subscribe(subscriber)
        for index in 0..<20 {
            clock.time += 1000
            hub.ingest(
                .circuit(zone: 1, mode: .normal, sequence: 1), address: BluetoothAddress(rawValue: 1),
                rssi: Int8(-50 - index), txPower: nil)
        }
        // Twenty frames in a few milliseconds: one update now, one pending at the end of the window.
        #expect(subscriber.beacons.count == 1)
        #expect(publisher.counters.beaconUpdates == 1)
        #expect((subscriber.beacons.first?["beacon"] as? [String: Any])?["rssi"] as? Int == -50)
        // The window ends: the pending update goes, once, with the last frame's reading.
        loop.advanceTime(by: .microseconds(TrackStateHub.beaconUpdateInterval - 1))
        #expect(subscriber.beacons.count == 1)
        loop.advanceTime(by: .microseconds(1))
        #expect(subscriber.beacons.count == 2)
        #expect(publisher.counters.beaconUpdates == 2)
        #expect((subscriber.beacons.last?["beacon"] as? [String: Any])?["rssi"] as? Int == -69)
        loop.advanceTime(by: .microseconds(TrackStateHub.beaconUpdateInterval * 4))
        #expect(subscriber.beacons.count == 2)
    }

    @Test func theHubEmitsTypedPublicationsInOrderWithoutAPublisher() throws {
        let loop = EmbeddedEventLoop()
        let clock = ManualClock(1_000 * Self.second)
        let hub = TrackStateHub(testingOn: loop, clock: clock)
        var publications: [Publication] = []
        var order: [String] = []
        hub.connect([
            PublicationRecorder { publications.append($0) }, PublicationRecorder { order.append("second \($0.seq)") },
        ])
        hub.start(checkClockEvery: nil)
        defer { hub.stop() }
        let evacuation = GeoRacingSignal.circuit(zone: 7, mode: .evacuation, sequence: 3)
        hub.ingest(evacuation, address: BluetoothAddress(rawValue: 5), rssi: -60, txPower: nil)
        clock.time += Self.second
        // The same decision again: deduplicated, no publication and no new seq.
        hub.ingest(evacuation, address: BluetoothAddress(rawValue: 5), rssi: -62, txPower: nil)
        #expect(publications.map(\.seq) == [1, 2])
        #expect(order == ["second 1", "second 2"])
        let last = try #require(publications.last)
        #expect(last.message.seq == 2)
        #expect(last.message.mode == "evacuation")
        #expect(last.message.source == "beacon")
        #expect(last.message.zone == 7)
        #expect(last.state.decision.modeName == "evacuation")
        #expect(last.beaconsHeard == 1)
        #expect(hub.counters.published == 2)
    }

    /// Issue 31: race control's route out is on the kiosks' evacuation screen, so a new route is a
    /// new publication, and the same route again is not.
    @Test func aNewEvacuationRouteIsPublished() throws {
        let loop = EmbeddedEventLoop()
        let clock = ManualClock(1_000 * Self.second)
        let hub = TrackStateHub(testingOn: loop, clock: clock)
        var publications: [Publication] = []
        hub.connect([PublicationRecorder { publications.append($0) }])
        hub.start(checkClockEvery: nil)
        defer { hub.stop() }
        hub.remoteFetched(RemoteSnapshot(globalMode: "EVACUATION"))
        clock.time += Self.second
        hub.remoteFetched(RemoteSnapshot(globalMode: "EVACUATION", evacuationRoute: "Puerta 3"))
        clock.time += Self.second
        hub.remoteFetched(RemoteSnapshot(globalMode: "EVACUATION", evacuationRoute: "Puerta 3"))
        #expect(publications.map(\.message.mode) == ["unknown", "evacuation", "evacuation"])
        #expect(publications.map { $0.message.remote?.evacuationRoute } == [nil, nil, "Puerta 3"])
    }
}
