import BLEPayload
import Foundation
import NIOCore
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// The daemon's table of devices that are not GeoRacing beacons (`status.devices`): at most 64,
/// the strongest, heard within the last 10 s, on an injected clock.
@Suite struct NearbyDevicesTests {
    static let second: Int64 = 1_000_000
    static let start: Int64 = 1_000 * second

    static func address(_ index: Int) -> BluetoothAddress {
        BluetoothAddress(rawValue: 0x4A_00_00_00_00_00 + UInt64(index))
    }

    static func record(_ table: inout NearbyDevices, _ index: Int, rssi: Int8?, at time: Int64) {
        table.record(address: address(index), addressType: 1, rssi: rssi, companyID: 0x004C, at: time)
    }

    @Test func atMost64AreListedAndAStrongerNewcomerDisplacesTheWeakest() {
        var table = NearbyDevices()
        #expect(table.capacity == 64 && table.window == 10 * Self.second)
        // 64 devices from -90 dBm (index 0) to -27 dBm (index 63).
        for index in 0..<64 { Self.record(&table, index, rssi: Int8(-90 + index), at: Self.start) }
        #expect(table.count == 64)
        // Weaker than all of them: not listed.
        Self.record(&table, 100, rssi: -95, at: Self.start + 1)
        // Stronger than the weakest (-90, index 0): takes its place.
        Self.record(&table, 101, rssi: -50, at: Self.start + 1)
        let listed = table.listed(at: Self.start + 2)
        #expect(listed.count == 64)
        #expect(!listed.contains { $0.address == Self.address(0) || $0.address == Self.address(100) })
        #expect(listed.contains { $0.address == Self.address(101) })
        #expect(listed.first?.rssi == -27)
        #expect(listed.map { Int($0.rssi ?? -128) } == listed.map { Int($0.rssi ?? -128) }.sorted(by: >))
        #expect(table.counters.reports == 66)
        #expect(table.counters.refused == 1)
        #expect(table.counters.displaced == 1)
    }

    @Test func aDeviceIsListedForTenSecondsAfterItWasLastHeard() {
        var table = NearbyDevices()
        Self.record(&table, 1, rssi: -70, at: Self.start)
        Self.record(&table, 2, rssi: -60, at: Self.start + 5 * Self.second)
        #expect(table.listed(at: Self.start + 10 * Self.second).map(\.address) == [Self.address(2), Self.address(1)])
        #expect(table.listed(at: Self.start + 10 * Self.second + 1).map(\.address) == [Self.address(2)])
        #expect(table.counters.expired == 1)
        #expect(table.listed(at: Self.start + 16 * Self.second).isEmpty)
        #expect(table.counters.expired == 2)
    }

    @Test func whenFullAnExpiredSlotGoesToAnyNewcomerEvenAWeakOne() {
        var table = NearbyDevices()
        for index in 0..<64 { Self.record(&table, index, rssi: -40, at: Self.start) }
        // Index 0 heard again later: the others expire first.
        Self.record(&table, 0, rssi: -40, at: Self.start + 5 * Self.second)
        Self.record(&table, 200, rssi: -99, at: Self.start + 11 * Self.second)
        #expect(table.counters.expired == 1)
        #expect(table.counters.refused == 0)
        let listed = table.listed(at: Self.start + 11 * Self.second)
        #expect(Set(listed.map(\.address)) == [Self.address(0), Self.address(200)])
    }

    @Test func aDeviceHeardAgainIsUpdatedInPlace() {
        var table = NearbyDevices()
        Self.record(&table, 1, rssi: -80, at: Self.start)
        Self.record(&table, 1, rssi: -55, at: Self.start + 2 * Self.second)
        // The same address with another type is another device.
        table.record(address: Self.address(1), addressType: 0, rssi: -90, companyID: nil, at: Self.start)
        let listed = table.listed(at: Self.start + 2 * Self.second)
        #expect(listed.count == 2)
        #expect(listed.first?.rssi == -55)
        #expect(listed.first?.reports == 2)
        #expect(listed.first?.lastSeen == Self.start + 2 * Self.second)
    }

    @Test func noRSSIIsWeakerThanAnyAndGivesWayFirst() {
        var table = NearbyDevices(capacity: 2)
        Self.record(&table, 1, rssi: nil, at: Self.start)
        Self.record(&table, 2, rssi: -127, at: Self.start)
        Self.record(&table, 3, rssi: -126, at: Self.start)
        #expect(table.listed(at: Self.start).map(\.address) == [Self.address(3), Self.address(2)])
        #expect(table.counters.displaced == 1)
    }

    @Test func timesAtTheEndsOfInt64NeitherTrapNorLookFresh() {
        var table = NearbyDevices()
        Self.record(&table, 1, rssi: -60, at: .min)
        Self.record(&table, 2, rssi: -60, at: .max)
        // Heard "after" now (a clock stepping back): fresh; Int64.min seen from Int64.max: long gone.
        #expect(table.listed(at: .max).map(\.address) == [Self.address(2)])
        #expect(table.listed(at: .min).map(\.address) == [Self.address(2)])
        let report = DeviceReport(table.listed(at: .max)[0], now: .max)
        #expect(report.lastSeen == 0)
    }

    @Test func theBatcherHandsOnlyTheOtherReportsToTheTable() {
        typealias Sink = AdvertisementSinkTests
        let devices = NearbyDeviceTable()
        var batcher = ScannedSignalBatcher(decoder: GeoRacingDecoder(), devices: devices)
        Sink.withReport(Sink.frame(Sink.redFlag), rssi: -71) { batcher.add($0, at: Self.start) }
        var bad = AdvertisingDataBuilder()
        bad.appendManufacturerData(companyID: GeoRacingSignal.defaultCompanyID, payload: [1, 2, 3])
        Sink.withReport(bad.bytes) { batcher.add($0, at: Self.start) }
        var phone = AdvertisingDataBuilder()
        phone.appendManufacturerData(companyID: 0x004C, payload: [0x02, 0x15])
        Sink.withReport(phone.bytes, address: Self.address(9), rssi: -88) { batcher.add($0, at: Self.start) }
        var headphones = AdvertisingDataBuilder()
        headphones.appendLocalName("headphones")
        Sink.withReport(headphones.bytes, address: Self.address(8), rssi: nil) { batcher.add($0, at: Self.start) }

        let batch = batcher.take()
        #expect(batch.signals.count == 1 && batch.rejectedFrames == 1)
        let report = devices.report(at: Self.start + Self.second)
        #expect(report.devices.map(\.address) == ["4A:00:00:00:00:09", "4A:00:00:00:00:08"])
        #expect(report.devices.first?.companyID == 0x004C)
        #expect(report.devices.first?.addressType == "random")
        #expect(report.devices.first?.lastSeen == 1)
        #expect(report.devices.last?.companyID == nil)
        #expect(report.counters.reports == 2)
        #expect(report.counters.limit == 64 && report.counters.window == 10)
    }

    @Test func theStatusRequestFlagIsParsedStrictly() {
        func parse(_ line: String) -> ClientRequest? { ClientRequest.parse(ByteBuffer(string: line)) }
        #expect(parse(#"{"cmd":"status","devices":true}"#) == .statusWithDevices)
        #expect(parse(#"{"cmd":"status","devices":false}"#) == .status)
        #expect(parse(#"{"cmd":"status"}"#) == .status)
        #expect(parse(#"{"cmd":"status","devices":"yes"}"#) == .invalid(reason: #""devices" must be true or false"#))
        #expect(ClientRequest.statusWithDevices.commandLine == #"{"cmd":"status","devices":true}"#)
    }

    @Test func aStatusWithDevicesRoundTrips() throws {
        var status = StatusMessage.sample()
        status.devices = [
            DeviceReport(
                address: "4A:11:22:33:44:55", addressType: "random", rssi: -88, companyID: 76, lastSeen: 0.25,
                reports: 3)
        ]
        status.devicesCounters = DeviceCounters(limit: 64, window: 10, reports: 5, displaced: 1, refused: 2, expired: 3)
        let text = String(decoding: status.line, as: UTF8.self)
        #expect(
            text.contains(
                #""devices":[{"addr":"4A:11:22:33:44:55","addr_type":"random","rssi":-88,"company_id":76,"#
                    + #""last_seen_s":0.250,"reports":3}],"devices_counters":{"limit":64,"window_s":10.000,"#))
        #expect(try ServerMessage(line: Array(status.line.dropLast())) == .status(status))
        // Without the flag the fields are absent, and a status without them decodes as before.
        #expect(!String(decoding: StatusMessage.sample().line, as: UTF8.self).contains("devices"))
    }

    @Test func theDaemonListsDevicesOnlyWhenAsked() throws {
        let harness = try SocketHarness()
        defer { harness.close() }
        let table = NearbyDeviceTable()
        let now = harness.clock.time
        var phone = AdvertisingDataBuilder()
        phone.appendManufacturerData(companyID: 0x004C, payload: [0x02, 0x15])
        AdvertisementSinkTests.withReport(phone.bytes, address: Self.address(5), rssi: -70) {
            table.record($0, at: now - Self.second)
        }
        try harness.onLoop { harness.status.add(table) }
        defer { withExtendedLifetime(table) {} }

        let client = try harness.greetedClient()
        let plain = try client.request(#"{"cmd":"status"}"#, reply: "status")
        #expect(plain["devices"] == nil && plain["devices_counters"] == nil)
        let asked = try client.request(#"{"cmd":"status","devices":true}"#, reply: "status")
        let devices = try #require(asked["devices"] as? [[String: Any]])
        #expect(devices.count == 1)
        #expect(devices.first?["addr"] as? String == "4A:00:00:00:00:05")
        #expect(devices.first?["last_seen_s"] as? Double == 1)
        #expect((asked["devices_counters"] as? [String: Any])?["reports"] as? Int == 1)

        // The watch's source asks the same way and gets the typed status.
        let source = DaemonWatchSource(path: harness.path)
        defer { source.close() }
        let status = try source.fetch(devices: true)
        #expect(status.devices?.map(\.address) == ["4A:00:00:00:00:05"])
        #expect(try source.fetch(devices: false).devices == nil)
    }
}
