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

/// A contested key (two transmitters disagreeing on one key) as the daemon reports it.
@Suite struct HubContestTests {
    static let second: Int64 = 1_000_000
    let address = BluetoothAddress(rawValue: 0xC0FF_EE00_0003)

    func withHub(
        _ body: @escaping (TrackStateHub, TrackStatePublisher, ManualClock, CapturingLogHandler.Store) throws -> Void
    ) throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let loop = group.next()
        let clock = ManualClock(1_000 * Self.second)
        let (logger, store) = CapturingLogHandler.logger()
        let hub = TrackStateHub(
            eventLoop: loop, configuration: FusionConfiguration(), clock: clock, backend: "test",
            logger: logger)
        let publisher = TrackStatePublisher(connectedTo: hub)
        let handed = HandedToLoop(body: body)
        try loop.submit {
            hub.start(checkClockEvery: nil)
            try handed.body(hub, publisher, clock, store)
            hub.stop()
        }.wait()
    }

    func spoofingWarnings(_ store: CapturingLogHandler.Store) -> [String] {
        store.at(.warning).map(\.message).filter { $0.hasPrefix("possible spoofing") }
    }

    @Test func theFirstContestOfAKeyIsLoggedOncePerMinute() throws {
        try withHub { hub, _, clock, store in
            let real = GeoRacingSignal.circuit(zone: 3, mode: .evacuation, sequence: 500, ttl: 10)
            let spoof = GeoRacingSignal.circuit(zone: 3, mode: .normal, sequence: 501, ttl: 255)
            hub.ingest(real, address: address, rssi: -60, txPower: nil)
            clock.time += 1_000
            hub.ingest(spoof, address: address, rssi: -88, txPower: nil)
            for _ in 0..<8 {
                clock.time += 250_000
                hub.ingest(real, address: address, rssi: -60, txPower: nil)
            }
            #expect(
                spoofingWarnings(store) == [
                    """
                    possible spoofing: zone 3 @ C0:FF:EE:00:00:03 heard with sequences 500 (evacuation) and 501 \
                    (normal)
                    """
                ])
            #expect(hub.latest.mode == .evacuation)

            // The contest lapses, and starts again within the minute: not logged again.
            clock.time += 20 * Self.second
            hub.ingest(spoof, address: address, rssi: -88, txPower: nil)
            hub.ingest(real, address: address, rssi: -60, txPower: nil)
            #expect(spoofingWarnings(store).count == 1)
            #expect(hub.engine.counters.contests == 2)

            // A minute after the first warning, a new contest is logged again.
            clock.time += 50 * Self.second
            hub.ingest(spoof, address: address, rssi: -88, txPower: nil)
            hub.ingest(real, address: address, rssi: -60, txPower: nil)
            #expect(spoofingWarnings(store).count == 2)
        }
    }

    @Test func statusAndBeaconMessagesMarkAContestedKey() throws {
        try withHub { hub, publisher, clock, _ in
            let subscriber = RecordingSubscriber(wantsBeacons: true)
            publisher.subscribe(subscriber)
            hub.ingest(
                .circuit(zone: 3, mode: .normal, sequence: 501, ttl: 60), address: address, rssi: -60,
                txPower: nil)
            #expect(
                subscriber.beacons.last.flatMap { ($0["beacon"] as? [String: Any])?["contested"] as? Bool }
                    == false)
            clock.time += Self.second
            hub.ingest(
                .circuit(zone: 3, mode: .redFlag, sequence: 500, ttl: 10), address: address, rssi: -70,
                txPower: nil)
            let line = StatusBoard(hub: hub, publisher: publisher).line()
            let status = RecordingSubscriber.object(ByteBuffer(bytes: line))
            let overrides = status["overrides"] as? [[String: Any]]
            #expect(overrides?.count == 1)
            #expect(overrides?.first?["contested"] as? Bool == true)
            #expect(overrides?.first?["mode"] as? String == "red_flag")
            #expect(overrides?.first?["seq"] as? Int == 500)
            let counters = status["counters"] as? [String: Any]
            #expect(counters?["contests"] as? Int == 1)
            #expect(counters?["contested_frames"] as? Int == 1)
            let report = StatusReport.render(try JSONDecoder().decode(StatusMessage.self, from: Data(line)))
            #expect(report.contains("active, CONTESTED (possible spoofing)"))
            #expect(report.contains("contests 1"))
            #expect(hub.latest.mode == .redFlag)
        }
    }

    @Test func theWarningLimiterIsBoundedAndSafeAtExtremeTimes() {
        var limiter = SpoofWarningLimiter()
        let key = OverrideKey.circuit(zone: 1, address: address)
        let atMax = limiter.shouldWarn(key, at: .max)
        let atMin = limiter.shouldWarn(key, at: .min)
        let justAfter = limiter.shouldWarn(key, at: .min + 1)
        #expect(atMax)
        #expect(atMin)
        #expect(!justAfter)
        for zone in 0..<UInt16(SpoofWarningLimiter.capacity + 10) {
            _ = limiter.shouldWarn(.circuit(zone: zone, address: address), at: 0)
        }
        #expect(limiter.suppressed >= 10)
    }
}

/// One status line answers every client for up to 100 ms while no state is published.
@Suite struct SharedStatusLineTests {
    @Test func aStatusLineIsSharedUntilAStateIsPublishedOrItIsOld() throws {
        // On an embedded loop: the reuse window runs on the loop's clock, which the test moves.
        let loop = EmbeddedEventLoop()
        let clock = ManualClock(1_000_000_000)
        let hub = TrackStateHub(testingOn: loop, clock: clock)
        let status = StatusBoard(hub: hub)
        hub.start(checkClockEvery: nil)
        defer { hub.stop() }
        let first = status.sharedLine()
        loop.advanceTime(by: .microseconds(StatusBoard.reuseInterval - 1))
        let second = status.sharedLine()
        #expect(first == second)
        #expect(status.reused == 1)
        hub.ingest(
            .circuit(zone: 4, mode: .redFlag, sequence: 1), address: BluetoothAddress(rawValue: 9),
            rssi: -60, txPower: nil)
        let afterPublication = RecordingSubscriber.object(status.sharedLine())
        #expect((afterPublication["state"] as? [String: Any])?["mode"] as? String == "red_flag")
        #expect((afterPublication["overrides"] as? [Any])?.count == 1)
        #expect(status.reused == 1)
        // No publication since, but the line is as old as the window: built again, not reused.
        loop.advanceTime(by: .microseconds(StatusBoard.reuseInterval))
        let rebuilt = RecordingSubscriber.object(status.sharedLine())
        #expect(status.reused == 1)
        #expect((rebuilt["counters"] as? [String: Any])?["status_reused"] as? Int == 1)
        _ = status.sharedLine()
        #expect(status.reused == 2)
    }
}
