import BLEPayload
import CircuitState
import Foundation
import Logging
import NIOEmbedded
import Synchronization
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// A radio that records what it was told to advertise.
final class RecordingAdvertiser: BeaconAdvertiserBackend {
    let sent = Mutex<[[UInt8]?]>([])
    var state: AdvertiserState {
        sent.withLock { $0.last.map { $0 == nil ? .idle : .advertising(mode: "legacy") } ?? .starting }
    }
    /// As the real radios count: each change to new data once.
    var frames: Int {
        sent.withLock { sent in sent.indices.count { sent[$0] != nil && ($0 == 0 || sent[$0 - 1] != sent[$0]) } }
    }
    var restarts: Int { 0 }
    func set(_ data: [UInt8]?) { sent.withLock { $0.append(data) } }
    func run() async throws {}
    func stop() {}

    /// The frames sent, decoded, with nil for each stop.
    var signals: [GeoRacingSignal?] {
        sent.withLock { $0 }.map { data in
            data.flatMap { bytes in
                bytes.withUnsafeBytes { raw in
                    guard case .signal(let signal) = GeoRacingDecoder().decode(AdvertisingData(raw)) else { return nil }
                    return signal
                }
            }
        }
    }
}

/// The daemon's `beacon:` section: the transmitter as one more output of the hub (docs/beacon.md).
@Suite struct BeaconOutputTests {
    static let second: Int64 = 1_000_000

    static func make() -> (TrackStateHub, EmbeddedEventLoop, ManualClock, RecordingAdvertiser, BeaconOutput) {
        let loop = EmbeddedEventLoop()
        let clock = ManualClock(1_000 * second)
        let hub = TrackStateHub(testingOn: loop, clock: clock)
        let radio = RecordingAdvertiser()
        let transmitter = BeaconTransmitter(
            configuration: .init(zone: 7, backend: "hci", adapter: "hci0", stateDir: nil), backend: radio,
            logger: Logger(label: "test"))
        let output = BeaconOutput(transmitter: transmitter, followsRaceControl: false, logger: Logger(label: "test"))
        hub.connect([output])
        return (hub, loop, clock, radio, output)
    }

    /// Race control's mode goes out; a beacon heard over the air (the fused mode) never does.
    @Test func itAdvertisesRaceControlNeverTheFusedMode() {
        let (hub, _, clock, radio, output) = Self.make()
        hub.start(checkClockEvery: nil)
        defer { hub.stop() }
        #expect(radio.signals == [nil])
        #expect(output.transmitter.status.detail == "the daemon follows no race control (remote.url is not set)")
        clock.time += Self.second
        hub.remoteFetched(RemoteSnapshot(globalMode: "SAFETY_CAR", temperature: 11.3))
        clock.time += Self.second
        hub.ingest(
            .circuit(zone: 3, mode: .evacuation, sequence: 1), address: BluetoothAddress(rawValue: 9), rssi: -60,
            txPower: nil)
        let sent = radio.signals.compactMap { $0 }
        #expect(!sent.isEmpty)
        #expect(sent.allSatisfy { $0 == .circuit(zone: 7, mode: .safetyCar, sequence: 0, ttl: 10, temperature: 11) })
    }

    /// Once race control is stale the transmitter stops, and the status says why.
    @Test func staleRaceControlStopsTheAdverts() {
        let (hub, loop, clock, radio, output) = Self.make()
        hub.start(checkClockEvery: nil)
        defer { hub.stop() }
        hub.remoteFetched(RemoteSnapshot(globalMode: "RED_FLAG"))
        #expect(radio.signals.last == .circuit(zone: 7, mode: .redFlag, sequence: 0))
        clock.time += 16 * Self.second
        loop.advanceTime(by: .hours(2))
        #expect(radio.signals.last == .some(nil))
        let status = output.transmitter.status
        #expect(status.state == "silent")
        #expect(status.detail?.hasPrefix("race control's state is stale or unreachable") == true)
        // Fresh again: the same frame, the same sequence.
        hub.remoteFetched(RemoteSnapshot(globalMode: "RED_FLAG"))
        #expect(radio.signals.last == .circuit(zone: 7, mode: .redFlag, sequence: 0))
    }

    @Test func itsStatusIsPartOfTheReplyAndReadsBack() throws {
        let (hub, _, _, _, output) = Self.make()
        hub.start(checkClockEvery: nil)
        defer { hub.stop() }
        hub.remoteFetched(RemoteSnapshot(globalMode: "EVACUATION", temperature: 300))
        let board = StatusBoard(hub: hub)
        board.add(output)
        var status = StatusMessage.sample()
        output.contribute(to: &status, for: StatusQuery(listLimit: 10, devices: false, now: 0))
        let beacon = try #require(status.beacon)
        #expect(beacon.state == "advertising" && beacon.mode == "evacuation" && beacon.temperature == 255)
        #expect(beacon.frame == "010007030000000aff")
        var writer = JSONWriter()
        status.render(into: &writer)
        let decoded = try JSONDecoder().decode(StatusMessage.self, from: Data(writer.bytes))
        #expect(decoded.beacon == beacon)
        #expect(StatusReport.render(decoded).contains("beacon    hci0 zone 7: advertising evacuation seq 0 255°C"))
        let advertising = MetricSample.samples(from: decoded).first {
            $0.series.family.name == "beacond_beacon_advertising"
        }
        #expect(advertising?.value == 1)
    }

    /// What MQTT's state payload is given: the status at each change of plan or radio state, not
    /// at every publication, and never the heartbeat's counts.
    @Test func statusChangesAreToldOnceEach() {
        let (hub, loop, clock, _, output) = Self.make()
        hub.start(checkClockEvery: nil)
        defer { hub.stop() }
        let told = Mutex<[BeaconStatus]>([])
        output.onStatusChange { status in told.withLock { $0.append(status) } }
        #expect(told.withLock { $0.map(\.state) } == ["silent"])
        hub.remoteFetched(RemoteSnapshot(globalMode: "RED_FLAG"))
        hub.remoteFetched(RemoteSnapshot(globalMode: "RED_FLAG"))
        clock.time += 16 * Self.second
        loop.advanceTime(by: .hours(2))
        let states = told.withLock { $0 }
        #expect(states.map(\.state) == ["silent", "advertising", "silent"])
        #expect(states[1].mode == "red_flag" && states[1].sequence == 0 && states[1].frames == 1)
        #expect(states[2].detail?.hasPrefix("race control's state is stale") == true)
        #expect(states.allSatisfy { $0.heartbeat == nil })
    }
}
