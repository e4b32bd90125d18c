import BLEPayload
import BeacondTestSupport
import CBlueZ
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// Device1 property parsing and the per-device table, on messages built in memory.
@Suite struct BlueZDeviceTrackerTests {
    static let key = BluetoothAddress(rawValue: 0xC0FFEE000001)

    /// Parses a PropertiesChanged-shaped message (interface, a{sv}, as).
    static func parse(_ changed: DBusValue, invalidated: [String] = []) throws -> BlueZDeviceProperties {
        let message = try DBusMessage.signal(
            path: BlueZFixtures.devicePath, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
            arguments: [.string("org.bluez.Device1"), changed, .array(element: "s", invalidated.map(DBusValue.string))])
        var reader = message.reader
        _ = try reader.string()
        var properties = BlueZDeviceProperties()
        try properties.parse(&reader)
        try properties.parseInvalidated(&reader)
        return properties
    }

    @Test func manufacturerDataBecomesADStructures() throws {
        let frame = BlueZFixtures.frame()
        let properties = try Self.parse(
            .properties([
                "Address": .string("C0:FF:EE:00:00:01"), "AddressType": .string("random"),
                "ManufacturerData": BlueZFixtures.manufacturerData([(0x004C, [1, 2]), (0x1234, frame)]),
                "RSSI": .int16(-61), "TxPower": .int16(4), "Name": .string("ignored"),
            ]))
        #expect(properties.address == Self.key)
        #expect(properties.addressType == .randomDevice)
        #expect(properties.hasManufacturerData)
        #expect(
            properties.manufacturerAD == BlueZFixtures.manufacturerAD(0x004C, [1, 2])
                + BlueZFixtures.manufacturerAD(0x1234, frame))
        #expect(properties.rssi == -61)
        #expect(properties.txPower == 4)
        #expect(properties.skipped == 0)
        #expect(properties.carriesUpdate)
    }

    @Test func oddTypesAreSkippedAndCounted() throws {
        // dbusmock's AddDevice sends an empty ManufacturerData typed aa{qv}; RSSI is fine.
        var properties = try Self.parse(
            .properties([
                "ManufacturerData": .array(element: "a{qv}", []), "RSSI": .int16(-70),
            ]))
        #expect(!properties.hasManufacturerData)
        #expect(properties.skipped == 1)
        #expect(properties.firstSkipped?.name == "ManufacturerData")
        #expect(properties.firstSkipped?.signature == "aa{qv}")
        #expect(properties.rssi == -70)

        // A value that is not `ay`, an RSSI that is not `n`, a bad address: all skipped.
        properties = try Self.parse(
            .properties([
                "ManufacturerData": .dictionary(
                    key: "q", value: "v", [DBusDictEntry(key: .uint16(0x1234), value: .variant(.string("x")))]),
                "RSSI": .int32(-70), "Address": .string("not an address"), "AddressType": .string("le-public"),
            ]))
        #expect(!properties.hasManufacturerData && properties.manufacturerAD.isEmpty)
        #expect(properties.rssi == nil && properties.address == nil && properties.addressType == nil)
        #expect(properties.skipped == 4)
        #expect(!properties.carriesUpdate)

        // Data too long for one AD structure.
        properties = try Self.parse(
            .properties([
                "ManufacturerData": BlueZFixtures.manufacturerData([(0x1234, Array(repeating: 0, count: 253))])
            ]))
        #expect(!properties.hasManufacturerData && properties.skipped == 1)
    }

    @Test func aMalformedDictionaryThrows() throws {
        #expect(throws: DBusDecodingError.self) { try Self.parse(.array(element: "s", [.string("RSSI")])) }
    }

    @Test func invalidatedPropertiesAreNoted() throws {
        let properties = try Self.parse(.properties([:]), invalidated: ["RSSI", "ManufacturerData", "Name"])
        #expect(properties.invalidatesRSSI && properties.invalidatesManufacturerData && !properties.invalidatesTxPower)
    }

    @Test func rssiIsClampedAndUnknownIsNil() throws {
        #expect(try Self.parse(.properties(["RSSI": .int16(-300)])).rssi == -128)
        #expect(try Self.parse(.properties(["RSSI": .int16(127)])).rssi == nil)
    }

    @Test func deviceAddressesComeFromObjectPaths() {
        let adapter = Array("/org/bluez/hci0".utf8CString)
        func parse(_ path: String) -> BluetoothAddress? {
            path.withCString { BlueZDeviceProperties.deviceAddress(path: $0, adapterPath: adapter) }
        }
        #expect(parse("/org/bluez/hci0/dev_C0_FF_EE_00_00_01") == Self.key)
        #expect(parse("/org/bluez/hci0/dev_c0_ff_ee_00_00_01") == Self.key)
        #expect(parse("/org/bluez/hci1/dev_C0_FF_EE_00_00_01") == nil)
        #expect(parse("/org/bluez/hci0/dev_C0_FF_EE_00_00_01/service0001") == nil)
        #expect(parse("/org/bluez/hci0/dev_C0_FF_EE_00_00") == nil)
        #expect(parse("/org/bluez/hci0") == nil)
        #expect(parse("/org/bluez/hci0/dev_G0_FF_EE_00_00_01") == nil)
    }

    @Test func rssiOnlyUpdatesReuseTheLastManufacturerData() throws {
        var tracker = BlueZDeviceTracker()
        var properties = try Self.parse(.properties(["RSSI": .int16(-80), "TxPower": .int16(-4)]))
        // No manufacturer data yet: no report.
        #expect(tracker.apply(&properties, to: Self.key) == nil)

        let frame = BlueZFixtures.frame()
        properties = try Self.parse(
            .properties(["ManufacturerData": BlueZFixtures.manufacturerData([(0x1234, frame)])]))
        let first = try #require(tracker.apply(&properties, to: Self.key))
        var buffer: [UInt8] = []
        let report = tracker.withReport(slot: first, timestamp: 42, buffer: &buffer) { $0.owned() }
        #expect(report.data == BlueZFixtures.manufacturerAD(0x1234, frame) + [2, 0x0A, 0xFC])
        #expect(report.rssi == -80)
        #expect(report.address == Self.key)
        #expect(report.origin == .bluezDevice)
        #expect(report.timestamp == 42)

        properties = try Self.parse(.properties(["RSSI": .int16(-50)]))
        let second = try #require(tracker.apply(&properties, to: Self.key))
        let repeated = tracker.withReport(slot: second, timestamp: 43, buffer: &buffer) { $0.owned() }
        #expect(repeated.data == report.data)
        #expect(repeated.rssi == -50)
        let decoded = repeated.withReport { GeoRacingDecoder().decode($0.data) }
        guard case .signal(let signal) = decoded else {
            Issue.record("the rebuilt report does not decode: \(decoded)")
            return
        }
        #expect(signal.mode == .redFlag && signal.zone == 3)
    }

    @Test func updatesWithoutManufacturerDataOrRSSIAreNotReports() throws {
        var tracker = BlueZDeviceTracker()
        var properties = try Self.parse(
            .properties(["ManufacturerData": BlueZFixtures.manufacturerData([(0x1234, [1])])]))
        #expect(tracker.apply(&properties, to: Self.key) != nil)
        properties = try Self.parse(.properties(["TxPower": .int16(0), "Name": .string("x")]))
        #expect(tracker.apply(&properties, to: Self.key) == nil)
        // Invalidated manufacturer data stops the reports.
        properties = try Self.parse(.properties([:]), invalidated: ["ManufacturerData"])
        _ = tracker.apply(&properties, to: Self.key)
        properties = try Self.parse(.properties(["RSSI": .int16(-40)]))
        #expect(tracker.apply(&properties, to: Self.key) == nil)
    }

    @Test func theTableIsBoundedAndForgetsTheLeastRecentlyUpdated() throws {
        var tracker = BlueZDeviceTracker(capacity: 3)
        var properties = try Self.parse(
            .properties(["ManufacturerData": BlueZFixtures.manufacturerData([(0x1234, [1])])]))
        for raw in UInt64(1)...3 {
            var copy = properties
            _ = tracker.apply(&copy, to: BluetoothAddress(rawValue: raw))
        }
        // Touch 1, so 2 is the oldest.
        properties = try Self.parse(.properties(["RSSI": .int16(-40)]))
        _ = tracker.apply(&properties, to: BluetoothAddress(rawValue: 1))
        properties = try Self.parse(.properties(["RSSI": .int16(-41)]))
        _ = tracker.apply(&properties, to: BluetoothAddress(rawValue: 4))
        #expect(tracker.count == 3)
        #expect(tracker.evictions == 1)
        #expect(tracker[BluetoothAddress(rawValue: 2)] == nil)
        #expect(tracker[BluetoothAddress(rawValue: 1)]?.rssi == -40)
        #expect(tracker[BluetoothAddress(rawValue: 4)]?.manufacturerAD.isEmpty == true)

        tracker.remove(BluetoothAddress(rawValue: 1))
        #expect(tracker.count == 2)
        #expect(tracker[BluetoothAddress(rawValue: 3)]?.manufacturerAD == BlueZFixtures.manufacturerAD(0x1234, [1]))
        #expect(tracker[BluetoothAddress(rawValue: 4)]?.rssi == -41)
        tracker.removeAll()
        #expect(tracker.count == 0)
    }
}
