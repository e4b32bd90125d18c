import BLEPayload
import CircuitState
import Foundation
import Logging
import NIOCore
import NIOEmbedded
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// Issue 11: the hub sends the configured zone names (`zone_name`) with the state and the beacon
/// shape, and a rename of the zone shown is a new publication.
@Suite struct ZoneNamesPublicationTests {
    static let second: Int64 = 1_000_000
    static let names = ZoneNames([3: "Main grandstand", 5: "Paddock"])

    /// A hub on an embedded loop with `names`, started, with a subscriber to its publisher.
    func withHub(
        names: ZoneNames = Self.names,
        _ body: (TrackStateHub, RecordingSubscriber, ManualClock) throws -> Void
    ) rethrows {
        let loop = EmbeddedEventLoop()
        let clock = ManualClock(1_000 * Self.second)
        let hub = TrackStateHub(
            eventLoop: loop, configuration: FusionConfiguration(), zoneNames: names, clock: clock, backend: "test",
            logger: Logger(label: "test"))
        let publisher = TrackStatePublisher(connectedTo: hub)
        hub.start(checkClockEvery: nil)
        defer { hub.stop() }
        let subscriber = RecordingSubscriber()
        publisher.subscribe(subscriber)
        try body(hub, subscriber, clock)
    }

    @Test func theStateAndItsBeaconCarryTheShownZonesName() throws {
        try withHub { hub, subscriber, _ in
            #expect(hub.statusMessage().state.zone == nil)
            #expect(hub.statusMessage().state.zoneName == nil)
            hub.ingest(
                .circuit(zone: 3, mode: .redFlag, sequence: 1), address: BluetoothAddress(rawValue: 1), rssi: -60,
                txPower: nil)
            let state = try #require(subscriber.states.last)
            #expect(state["zone"] as? Int == 3)
            #expect(state["zone_name"] as? String == "Main grandstand")
            #expect((state["beacon"] as? [String: Any])?["zone_name"] as? String == "Main grandstand")
            #expect(hub.statusMessage().state.zoneName == "Main grandstand")
        }
    }

    @Test func anUnnamedZoneHasANullName() throws {
        try withHub { hub, subscriber, _ in
            hub.ingest(
                .circuit(zone: 4, mode: .safetyCar, sequence: 1), address: BluetoothAddress(rawValue: 4), rssi: -60,
                txPower: nil)
            let state = try #require(subscriber.states.last)
            #expect(state["zone"] as? Int == 4)
            #expect(state["zone_name"] is NSNull)
            #expect((state["beacon"] as? [String: Any])?["zone_name"] is NSNull)
        }
    }

    /// A rename of the zone shown publishes (new seq); a rename of another zone does not.
    @Test func aRenameOfTheShownZoneIsANewPublication() {
        withHub { hub, subscriber, _ in
            hub.ingest(
                .circuit(zone: 3, mode: .redFlag, sequence: 1), address: BluetoothAddress(rawValue: 1), rssi: -60,
                txPower: nil)
            let before = hub.seq
            hub.reconfigure(zoneNames: ZoneNames([3: "Grandstand", 5: "Paddock"]))
            #expect(hub.seq == before + 1)
            #expect(subscriber.states.last?["seq"] as? Int == before + 1)
            #expect(subscriber.states.last?["zone_name"] as? String == "Grandstand")
            #expect(subscriber.states.last?["mode"] as? String == "red_flag")
            #expect((subscriber.states.last?["beacon"] as? [String: Any])?["zone_name"] as? String == "Grandstand")

            hub.reconfigure(zoneNames: ZoneNames([3: "Grandstand", 5: "Pit"]))
            #expect(hub.seq == before + 1)
            #expect(hub.zoneNames[5] == "Pit")

            // With new fusion settings, one publication with the new name.
            var fusion = FusionConfiguration()
            fusion.minRSSI = -80
            hub.reconfigure(fusion, zoneNames: ZoneNames())
            #expect(hub.seq == before + 2)
            #expect(subscriber.states.last?["zone_name"] is NSNull)
            #expect(subscriber.states.count == 3)
        }
    }

    /// Staff devices (v2 frames) carry a zone too, but only circuit beacons name theirs.
    @Test func onlyCircuitBeaconsNameTheirZone() throws {
        try withHub { hub, _, _ in
            let staff = GeoRacingSignal.staff(sourceID: 0xC0FFEE, zone: 3, mode: .redFlag, sequence: 1, ttl: 30)
            let address = BluetoothAddress(rawValue: 7)
            hub.ingest(staff, address: address, rssi: -60, txPower: nil)
            let report = try #require(hub.beaconReport(for: OverrideKey(signal: staff, address: address)))
            #expect(report.kind == "staff")
            #expect(report.zoneName == nil)
            // The state still names the zone it shows.
            #expect(hub.statusMessage().state.zone == 3)
            #expect(hub.statusMessage().state.zoneName == "Main grandstand")
            let circuit = GeoRacingSignal.circuit(zone: 5, mode: .normal, sequence: 1)
            hub.ingest(circuit, address: BluetoothAddress(rawValue: 5), rssi: -60, txPower: nil)
            let heard = hub.statusMessage().beacons.first { $0.kind == "circuit" }
            #expect(heard?.zoneName == "Paddock")
        }
    }

    @Test func statusShowsTheNameEscaped() throws {
        var status = StatusMessage.sample()
        status.state.zone = 3
        status.state.zoneName = "Main grandstand"
        #expect(StatusReport.render(status).contains("zone 3 (Main grandstand)\n"))
        status.state.zoneName = "Evil\u{1B}[2J\u{202E}x"
        let report = StatusReport.render(status)
        #expect(report.contains(#"zone 3 (Evil\u{1b}[2J\u{202e}x)"#))
        #expect(!report.contains("\u{1B}") && !report.contains("\u{202E}"))
        status.state.zoneName = nil
        #expect(StatusReport.render(status).contains("zone 3\n"))
    }
}
