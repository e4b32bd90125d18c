import BLEPayload
import BeacondTestSupport
import CircuitState
import Logging
import NIOCore
import NIOPosix
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// The bluez backend across two of bluetoothd's adapters (issue 32): one backend and one D-Bus
/// connection per adapter, against python-dbusmock's bluez5 template; the beacon's device appears
/// under each adapter, and its advert counts once.
@Suite(.serialized) struct BlueZScannerSetTests {
    @Test func aBeaconSeenByTwoAdaptersCountsOnce() async throws {
        let bus = try await BlueZMockBus()
        try await bus.startBlueZ()
        try bus.addAdapter("hci0")
        try bus.addAdapter("hci1")
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let hub = TrackStateHub(
            eventLoop: group.next(), configuration: FusionConfiguration(), clock: BootClock(), backend: "bluez",
            adapters: ["hci0", "hci1"], copyFilter: AdapterCopyFilter(window: 30_000_000),
            logger: Logger(label: "test"))
        let status = StatusBoard(hub: hub, publisher: TrackStatePublisher(connectedTo: hub))
        try await hub.eventLoop.submit { hub.start(checkClockEvery: nil) }.get()
        var members: [ScannerSet.Member] = []
        for (index, name) in ["hci0", "hci1"].enumerated() {
            let tag = ScannerAdapterTag(name: name, index: UInt16(index), filtersCopies: true)
            let sink = HubAdvertisementSink(hub: hub, decoder: GeoRacingDecoder(), adapter: tag)
            var configuration = BlueZScannerConfiguration()
            configuration.busAddress = bus.address
            configuration.adapter = name
            configuration.silenceRestart = 0
            configuration.refreshInterval = 0
            let backend = try BlueZScannerBackend(configuration: configuration, sink: sink, logger: HCITestLogger.quiet)
            members.append(ScannerSet.Member(tag: tag, sink: sink, backend: backend))
        }
        let set = ScannerSet(members: members, hub: hub)
        status.add(set)
        let task = Task { try await set.run() }
        #expect(await hub.eventually(within: 30) { $0.scanner.state == .up })
        #expect(try await hub.eventLoop.submit { hub.scanner.adapters.map(\.state) }.get() == [.up, .up])

        let data = BlueZFixtures.manufacturerData([(0x1234, BlueZFixtures.frame(mode: .redFlag, sequence: 4))])
        for adapter in ["hci0", "hci1"] {
            let path = try bus.addDevice(BlueZFixtures.address, adapter: adapter)
            try bus.update(path, ["ManufacturerData": data, "RSSI": .int16(-60)])
        }
        #expect(await hub.eventually(within: 30) { $0.copyCounters?.dropped == 1 })
        #expect(
            try await hub.eventLoop.submit { (hub.counters.signals, hub.latest.decision.modeName) }.get() == (
                1, "red_flag"
            ))
        let message = try await hub.eventLoop.submit { status.message() }.get()
        #expect(message.scanner.adapters.map(\.name) == ["hci0", "hci1"])
        #expect(message.scanner.adapters.allSatisfy { ($0.reports ?? 0) >= 1 })
        #expect((message.bluez?.reports ?? 0) >= 2)

        // bluetoothd loses hci1: the scanner is degraded, hci0 scans on.
        try bus.removeAdapter("hci1")
        #expect(await hub.eventually(within: 30) { $0.scanner.state == .degraded })
        #expect(try await hub.eventLoop.submit { hub.scanner.adapters.map(\.state) }.get() == [.up, .recovering])
        task.cancel()
        _ = await task.result
        try await hub.eventLoop.submit { hub.stop() }.get()
        try await group.shutdownGracefully()
    }
}
