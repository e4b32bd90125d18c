import BLEPayload
import CircuitState
import Foundation
import Logging
import NIOCore
import NIOPosix
import Synchronization
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// The live path's batches into the hub: one evaluation per read time, bursts that wait on a busy
/// loop taken together and in order, other devices recorded once per burst.
@Suite struct HubBatchIngestTests {
    typealias Sink = AdvertisementSinkTests
    static let second: Int64 = 1_000_000

    /// A hub on its own loop, started with a publication observer that records (mode, scanner state).
    final class Fixture: @unchecked Sendable {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let hub: TrackStateHub
        let devices = NearbyDeviceTable()
        let sink: HubAdvertisementSink
        /// Written on the loop; a box of its own, so no closure sent to the loop holds the fixture
        /// (its deinit waits on the loop, which must not run there).
        private let published = Publications()

        final class Publications: Sendable {
            let entries = Mutex<[String]>([])
        }

        init(clock: EngineClock = BootClock()) throws {
            hub = TrackStateHub(
                eventLoop: group.next(), configuration: FusionConfiguration(), clock: clock, backend: "hci",
                logger: Logger(label: "test"))
            sink = HubAdvertisementSink(hub: hub, decoder: GeoRacingDecoder(), devices: devices)
            hub.connect([
                PublicationRecorder { [published] publication in
                    let entry = "\(publication.state.decision.modeName) \(publication.message.scanner.state.rawValue)"
                    published.entries.withLock { $0.append(entry) }
                }
            ])
            try hub.eventLoop.submit { [hub] in hub.start(checkClockEvery: nil) }.wait()
        }

        /// The publications so far, each "mode scanner-state".
        var publications: [String] {
            _ = try? hub.eventLoop.submit {}.wait() // what the loop had queued has run
            return published.entries.withLock { $0 }
        }

        func onLoop<T: Sendable>(_ body: @escaping @Sendable (TrackStateHub) -> T) throws -> T {
            try hub.eventLoop.submit { [hub] in body(hub) }.wait()
        }

        /// Blocks the loop until the returned semaphore is signalled.
        func stallLoop() -> DispatchSemaphore {
            let gate = DispatchSemaphore(value: 0)
            hub.eventLoop.execute { gate.wait() }
            return gate
        }

        func hear(_ signal: GeoRacingSignal, from address: UInt64, at time: Int64) {
            Sink.withReport(Sink.frame(signal), address: BluetoothAddress(rawValue: address)) {
                sink.receive($0, bootMicros: time)
            }
        }

        deinit {
            try? hub.eventLoop.submit { [hub] in hub.stop() }.wait()
            try? group.syncShutdownGracefully()
        }
    }

    static func signal(_ mode: GeoRacingMode, zone: UInt16 = 1) -> GeoRacingSignal {
        .circuit(zone: zone, mode: mode, sequence: 1, ttl: 30)
    }

    @Test func signalsReadTogetherAreEvaluatedOnceAndEachReadTimeOnItsOwn() throws {
        let fixture = try Fixture()
        let start = fixture.publications.count
        let now = MonotonicClock.bootMicros()
        // One read: three beacons heard at the same time make one publication, the most severe.
        fixture.hear(Self.signal(.normal), from: 1, at: now)
        fixture.hear(Self.signal(.redFlag, zone: 2), from: 2, at: now)
        fixture.hear(Self.signal(.evacuation, zone: 3), from: 3, at: now)
        fixture.sink.flush()
        #expect(Array(fixture.publications.dropFirst(start)) == ["evacuation down"])
        #expect(try fixture.onLoop { $0.counters.signals } == 3)
        #expect(try fixture.onLoop { $0.directory.count } == 3)

        // Two reads in one burst (a later read time): each time is evaluated, in order.
        let next = try Fixture()
        let before = next.publications.count
        next.hear(Self.signal(.redFlag), from: 1, at: now)
        next.hear(Self.signal(.evacuation, zone: 2), from: 2, at: now + 10)
        next.sink.flush()
        #expect(Array(next.publications.dropFirst(before)) == ["red_flag down", "evacuation down"])
    }

    @Test func burstsWaitingOnABusyLoopAreIngestedTogetherInOrder() throws {
        let fixture = try Fixture()
        let now = MonotonicClock.bootMicros()
        let gate = fixture.stallLoop()
        // The same beacon, newer sequence each burst: the last one heard must be the one in force.
        for sequence in UInt16(1)...5 {
            fixture.hear(.circuit(zone: 4, mode: .safetyCar, sequence: sequence, ttl: 30), from: 9, at: now)
            fixture.sink.flush()
        }
        #expect(fixture.sink.counters.droppedSignals == 0)
        gate.signal()
        let (signals, sequence) = try fixture.onLoop { hub in
            (hub.counters.signals, hub.engine.activeOverrides(at: now).first?.signal.sequence)
        }
        #expect(signals == 5)
        #expect(sequence == 5)
        #expect(fixture.sink.counters.reports == 5)
    }

    @Test func aScannerStateChangeStaysBetweenTheBurstsAroundIt() throws {
        let fixture = try Fixture()
        fixture.sink.scannerStateChanged(.up, detail: nil)
        #expect(try fixture.onLoop { $0.scanner.state } == .up)
        let start = fixture.publications.count
        let now = MonotonicClock.bootMicros()
        let gate = fixture.stallLoop()
        fixture.hear(Self.signal(.redFlag), from: 1, at: now)
        fixture.sink.flush()
        fixture.sink.scannerStateChanged(.down, detail: "adapter hci0 is gone")
        fixture.hear(Self.signal(.evacuation, zone: 2), from: 2, at: now + 1)
        fixture.sink.flush()
        gate.signal()
        // The red flag before the scanner went down, the evacuation after.
        #expect(
            Array(fixture.publications.dropFirst(start)) == ["red_flag up", "red_flag down", "evacuation down"])
        #expect(try fixture.onLoop { $0.counters.signals } == 2)
    }

    @Test func otherDevicesAreRecordedAtTheEndOfTheBurst() throws {
        let fixture = try Fixture()
        let now = MonotonicClock.bootMicros()
        var other = AdvertisingDataBuilder()
        other.appendManufacturerData(companyID: 0x004C, payload: [0x02, 0x15, 1, 2, 3])
        for index in 0..<3 {
            Sink.withReport(other.bytes, address: BluetoothAddress(rawValue: 0x4A00 + UInt64(index)), rssi: -80) {
                fixture.sink.receive($0, bootMicros: now)
            }
        }
        #expect(fixture.devices.report(at: now).devices.isEmpty)
        // A burst with no GeoRacing frame still hands its devices over.
        fixture.sink.flush()
        let (devices, counters) = fixture.devices.report(at: now)
        #expect(devices.count == 3)
        #expect(devices.allSatisfy { $0.companyID == 0x004C && $0.rssi == -80 })
        #expect(counters.reports == 3)
        #expect(try fixture.onLoop { $0.counters.signals } == 0)
    }

    @Test func replayRecordsOtherDevicesAtOnce() {
        let devices = NearbyDeviceTable()
        var batcher = ScannedSignalBatcher(decoder: GeoRacingDecoder(), devices: devices)
        var other = AdvertisingDataBuilder()
        other.appendLocalName("headphones")
        Sink.withReport(other.bytes, address: BluetoothAddress(rawValue: 0x11)) { batcher.add($0, at: 5) }
        #expect(devices.report(at: 5).devices.map(\.reports) == [1])
        #expect(batcher.isEmpty)
    }
}
