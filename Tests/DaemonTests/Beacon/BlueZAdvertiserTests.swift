import BLEPayload
import BeacondTestSupport
import Logging
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// The transmitter's bluez backend against python-dbusmock's bluez5 template on a private bus
/// (docs/beacon.md, "The radio"). The real bluetoothd is in the QEMU stack (boot "bluez").
@Suite struct BlueZAdvertiserTests {
    static let signal = GeoRacingSignal.circuit(zone: 7, mode: .redFlag, sequence: 3)
    static let frame = signal.advertisingData()
    static let path = "/org/georacing/beacond/advertisement"
    static let interface = "org.bluez.LEAdvertisement1"

    struct Running {
        let advertiser: BlueZAdvertiser
        let task: Task<Result<Void, any Error>, Never>

        func stop() async -> Result<Void, any Error> {
            advertiser.stop()
            return await task.value
        }
    }

    static func running(_ bus: BlueZMockBus) throws -> Running {
        var configuration = BlueZAdvertiser.Configuration(adapter: "hci0")
        configuration.busAddress = bus.address
        configuration.retryInitial = 50_000
        configuration.retryMax = 200_000
        configuration.interval = 152_000
        let advertiser = try BlueZAdvertiser(configuration: configuration, logger: HCITestLogger.quiet)
        let task = Task { () -> Result<Void, any Error> in
            do { return .success(try await advertiser.run()) } catch { return .failure(error) }
        }
        return Running(advertiser: advertiser, task: task)
    }

    /// The advertisement's properties, read from the advertiser's object as bluetoothd reads them.
    static func properties(_ bus: BlueZMockBus) throws -> [String: DBusValue] {
        let owner = try #require(try bus.otherClients().first)
        let reply = try bus.call(owner, path, "org.freedesktop.DBus.Properties", "GetAll", [.string(interface)])
        var values: [String: DBusValue] = [:]
        if case .dictionary(_, _, let entries)? = reply.first {
            for entry in entries { if let key = entry.key.text { values[key] = entry.value.unwrapped } }
        }
        return values
    }

    static func manufacturerPayload(_ properties: [String: DBusValue]) -> [UInt8]? {
        guard case .dictionary(_, _, let entries)? = properties["ManufacturerData"], entries.count == 1,
            entries[0].key == .uint16(0x1234), case .bytes(let payload) = entries[0].value.unwrapped
        else { return nil }
        return payload
    }

    @Test func eachChangeUnregistersAndRegistersABroadcastAdvertisement() async throws {
        let bus = try await BlueZMockBus.started()
        let running = try Self.running(bus)
        #expect(await waitUntil { running.advertiser.state == .idle })
        #expect(try bus.adapterCalls().isEmpty)

        running.advertiser.set(Self.frame)
        #expect(await waitUntil { running.advertiser.state == .advertising(mode: "bluez") })
        let register = try #require(try bus.adapterCalls().last)
        #expect(register.method == "RegisterAdvertisement")
        #expect(register.arguments.first == .objectPath(Self.path))
        var properties = try Self.properties(bus)
        #expect(properties["Type"] == .string("broadcast"))
        #expect(Self.manufacturerPayload(properties) == Self.signal.encoded())
        // 152 ms in whole milliseconds, as bluetoothd takes it.
        #expect(properties["MinInterval"] == .uint32(152))
        #expect(properties["MaxInterval"] == .uint32(152))

        let nextSignal = GeoRacingSignal.circuit(zone: 7, mode: .normal, sequence: 4)
        running.advertiser.set(nextSignal.advertisingData())
        #expect(await waitUntil { running.advertiser.frames == 2 })
        #expect(try bus.adapterCalls().map(\.method).suffix(2) == ["UnregisterAdvertisement", "RegisterAdvertisement"])
        properties = try Self.properties(bus)
        #expect(Self.manufacturerPayload(properties) == nextSignal.encoded())

        // Silence unregisters; a stop after it has nothing more to say.
        running.advertiser.set(nil)
        #expect(await waitUntil { running.advertiser.state == .idle })
        #expect(try bus.adapterCalls().last?.method == "UnregisterAdvertisement")
        let count = try bus.adapterCalls().count
        #expect((try? await running.stop().get()) != nil)
        #expect(try bus.adapterCalls().count == count)
        #expect(running.advertiser.state == .stopped)
    }

    @Test func aStopUnregistersTheAdvertisement() async throws {
        let bus = try await BlueZMockBus.started()
        let running = try Self.running(bus)
        running.advertiser.set(Self.frame)
        #expect(await waitUntil { running.advertiser.state == .advertising(mode: "bluez") })
        #expect((try? await running.stop().get()) != nil)
        #expect(try bus.adapterCalls().map(\.method) == ["RegisterAdvertisement", "UnregisterAdvertisement"])
    }

    @Test func aMissingAdapterIsWaitedForAndALostBluetoothdIsFollowed() async throws {
        let bus = try await BlueZMockBus()
        try await bus.startBlueZ()
        let running = try Self.running(bus)
        running.advertiser.set(Self.frame)
        #expect(
            await waitUntil {
                if case .down(let reason) = running.advertiser.state { return reason.contains("hci0 not found") }
                return false
            })
        try bus.addAdapter()
        #expect(await waitUntil(within: 5) { running.advertiser.state == .advertising(mode: "bluez") })
        #expect(running.advertiser.restarts == 0)

        bus.stopBlueZ()
        #expect(
            await waitUntil {
                if case .down(let reason) = running.advertiser.state { return reason.contains("bluetoothd") }
                return false
            })
        try await bus.startBlueZ()
        try bus.addAdapter()
        #expect(await waitUntil(within: 5) { running.advertiser.state == .advertising(mode: "bluez") })
        #expect(running.advertiser.restarts == 1)
        #expect(try bus.adapterCalls().map(\.method) == ["RegisterAdvertisement"])
        _ = await running.stop()
    }

    @Test func aReleasedAdvertisementIsRegisteredAgain() async throws {
        let bus = try await BlueZMockBus.started()
        let running = try Self.running(bus)
        running.advertiser.set(Self.frame)
        #expect(await waitUntil { running.advertiser.state == .advertising(mode: "bluez") })
        // What bluetoothd does when it drops an advertisement: forget it, then call Release.
        try bus.call(
            "org.bluez", "/org/bluez/hci0", "org.bluez.LEAdvertisingManager1", "UnregisterAdvertisement",
            [.objectPath(Self.path)])
        let owner = try #require(try bus.otherClients().first)
        try bus.call(owner, Self.path, Self.interface, "Release")
        #expect(
            await waitUntil {
                running.advertiser.restarts == 1 && running.advertiser.state == .advertising(mode: "bluez")
            })
        #expect(running.advertiser.frames == 2)
        _ = await running.stop()
    }

    @Test func theManufacturerDataIsTakenFromTheADStructures() {
        // Flags, then 0x1234's frame, then another company's, then a truncated structure.
        let data: [UInt8] = [2, 0x01, 0x06, 4, 0xFF, 0x34, 0x12, 0xAA, 3, 0xFF, 0x4C, 0x00, 9, 0xFF, 1]
        guard case .dictionary(let key, let value, let entries) = BlueZAdvertiser.manufacturerData(data) else {
            Issue.record("not a dictionary")
            return
        }
        #expect(key == "q" && value == "v")
        #expect(
            entries == [
                DBusDictEntry(key: .uint16(0x1234), value: .variant(.bytes([0xAA]))),
                DBusDictEntry(key: .uint16(0x004C), value: .variant(.bytes([]))),
            ])
    }
}
