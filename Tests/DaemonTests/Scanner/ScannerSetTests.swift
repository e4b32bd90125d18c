import BLEPayload
import BeacondTestSupport
import CircuitState
import Logging
import NIOCore
import NIOPosix
import Synchronization
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// Several adapters in one daemon (issue 32): one HCI backend per fake controller, each with its
/// own sink, feeding one hub through a `ScannerSet`, as `ScannerSet.make` builds it for the daemon.
@Suite struct ScannerSetTests {
    static let redFlag = GeoRacingSignal.circuit(zone: 3, mode: .redFlag, sequence: 7, ttl: 30)
    static let beacon: UInt64 = 0xC0_FF_EE_00_00_03

    final class Fixture: @unchecked Sendable {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let hub: TrackStateHub
        let publisher: TrackStatePublisher
        let status: StatusBoard
        let set: ScannerSet
        let controllers: [FakeController]
        private let adapters: [FakeAdapter]
        private var task: Task<Void, any Error>?

        /// `openers`: per adapter, an opener instead of its fake controller's.
        init(names: [String] = ["hci1", "hci2"], openers: [Int: HCIScannerBackend.Opener] = [:]) throws {
            hub = TrackStateHub(
                eventLoop: group.next(), configuration: FusionConfiguration(), clock: BootClock(), backend: "hci",
                adapters: names,
                // A window far longer than a loaded test machine can delay one thread's read behind
                // the other's: the second copy is always a copy.
                copyFilter: names.count > 1 ? AdapterCopyFilter(window: 30_000_000) : nil, logger: Logger(label: "test")
            )
            publisher = TrackStatePublisher(connectedTo: hub)
            status = StatusBoard(hub: hub, publisher: publisher)
            controllers = names.indices.map { FakeController(deviceID: UInt16($0 + 1)) }
            adapters = controllers.map { FakeAdapter([$0]) }
            var members: [ScannerSet.Member] = []
            for (index, name) in names.enumerated() {
                let tag = ScannerAdapterTag(name: name, index: UInt16(index), filtersCopies: names.count > 1)
                let sink = HubAdvertisementSink(hub: hub, decoder: GeoRacingDecoder(), adapter: tag)
                var configuration = HCIScannerConfiguration(adapter: name, silenceRestart: 0)
                configuration.retryInitial = 20_000
                configuration.retryMax = 80_000
                let backend = try HCIScannerBackend(
                    configuration: configuration, sink: sink, logger: HCITestLogger.quiet,
                    opener: openers[index] ?? adapters[index].opener)
                members.append(ScannerSet.Member(tag: tag, sink: sink, backend: backend))
            }
            set = ScannerSet(members: members, hub: hub)
            status.add(set)
            try hub.eventLoop.submit { [hub] in hub.start(checkClockEvery: nil) }.wait()
        }

        func start() {
            task = Task { [set] in try await set.run() }
        }

        /// Stops every backend and returns how the set ended.
        func stop() async -> Result<Void, any Error>? {
            task?.cancel()
            return await task?.result
        }

        /// How the set ended by itself.
        func end() async -> Result<Void, any Error>? { await task?.result }

        func onLoop<T: Sendable>(_ body: @escaping @Sendable (TrackStateHub) -> T) async throws -> T {
            try await hub.eventLoop.submit { [hub] in body(hub) }.get()
        }

        func statusMessage() async throws -> StatusMessage {
            try await hub.eventLoop.submit { [status] in status.message() }.get()
        }

        /// Polls the hub and its status board on the loop until `condition` holds.
        func eventually(_ condition: @escaping @Sendable (TrackStateHub, StatusBoard) -> Bool) async -> Bool {
            await hub.eventually { [status] hub in condition(hub, status) }
        }

        func waitFor(_ state: ScannerStatus.State) async -> Bool {
            await eventually { hub, _ in hub.scanner.state == state }
        }

        /// Every controller hears `signal` from the beacon, at these RSSIs, in this order.
        func hear(_ signal: GeoRacingSignal, rssi: [Int8]) {
            let data = signal.advertisingData()
            for (controller, strength) in zip(controllers, rssi) {
                controller.inject(
                    FakeController.legacyEvent([
                        FakeController.report(ScannerSetTests.beacon, rssi: strength, data: data)
                    ]))
            }
        }

        deinit {
            task?.cancel()
            try? hub.eventLoop.submit { [hub] in hub.stop() }.wait()
            try? group.syncShutdownGracefully()
        }
    }

    @Test func anAdvertHeardOnTwoAdaptersIsPublishedOnceAndCountedOnce() async throws {
        let fixture = try Fixture()
        fixture.start()
        #expect(await fixture.waitFor(.up))
        let before = try await fixture.onLoop { $0.seq }
        fixture.hear(Self.redFlag, rssi: [-60, -61])
        #expect(await fixture.eventually { $1.message().scan?.copies?.dropped == 1 })
        let (seq, mode, signals) = try await fixture.onLoop {
            ($0.seq, $0.latest.decision.modeName, $0.counters.signals)
        }
        #expect(seq == before + 1)
        #expect(mode == "red_flag")
        #expect(signals == 1)

        let status = try await fixture.statusMessage()
        #expect(status.scanner.state == .up)
        #expect(status.scanner.adapters.map(\.name) == ["hci1", "hci2"])
        #expect(status.scanner.adapters.map(\.state) == [.up, .up])
        #expect(status.scanner.adapters.map(\.reports) == [1, 1])
        #expect(status.scan?.reports == 2)
        #expect(status.scan?.copies == CopyFilterStatus(passed: 1, dropped: 1, handovers: 0, evictions: 0))
        #expect(status.hci?.adapter == "hci1,hci2")
        #expect(status.hci?.reports == 2)
        // The state message carries each adapter's state, without counters or reasons.
        let line = String(decoding: status.state.line, as: UTF8.self)
        #expect(
            line.contains(
                #""scanner":{"backend":"hci","state":"up","adapters":[{"name":"hci1","state":"up"},"#
                    + #"{"name":"hci2","state":"up"}]}"#))
        #expect(try #require(await fixture.stop()).isSuccess)
    }

    @Test func aStrongerCopyOnTheOtherAdapterTakesTheAdvertOver() async throws {
        let fixture = try Fixture()
        fixture.start()
        #expect(await fixture.waitFor(.up))
        // The weak copy first, and through the hub, before the strong one is sent.
        let data = Self.redFlag.advertisingData()
        fixture.controllers[0].inject(
            FakeController.legacyEvent([FakeController.report(Self.beacon, rssi: -80, data: data)]))
        #expect(await fixture.eventually { hub, _ in hub.counters.signals == 1 })
        fixture.controllers[1].inject(
            FakeController.legacyEvent([FakeController.report(Self.beacon, rssi: -60, data: data)]))
        #expect(await fixture.eventually { $1.message().scan?.copies?.handovers == 1 })
        let rssi = try await fixture.onLoop { $0.engine.activeOverrides(at: $0.clock.now(), limit: 1).best.first?.rssi }
        #expect(rssi == -60)
        #expect(try await fixture.statusMessage().scan?.copies?.dropped == 0)
        _ = await fixture.stop()
    }

    @Test func losingOneAdapterDegradesTheScannerAndTheFlagFlowsOnTheOther() async throws {
        let fixture = try Fixture()
        fixture.start()
        #expect(await fixture.waitFor(.up))
        fixture.hear(Self.redFlag, rssi: [-60, -61])
        #expect(await fixture.eventually { hub, _ in hub.latest.decision.modeName == "red_flag" })

        // The kernel says hci1 went down: its backend retries, hci2 scans on.
        fixture.controllers[0].injectDeviceEvent(4, device: 1)
        #expect(await fixture.waitFor(.degraded))
        let status = try await fixture.statusMessage()
        #expect(status.scanner.adapters.map(\.state) == [.recovering, .up])
        // The reason names the adapter; retries change its words (gone, then missing).
        #expect(status.scanner.detail?.hasPrefix("hci1: ") == true)
        #expect(try await fixture.onLoop { $0.latest.decision.modeName } == "red_flag")

        // The next frame comes through hci2 alone, and refreshes the flag.
        let signals = try await fixture.onLoop { $0.counters.signals }
        let refresh = GeoRacingSignal.circuit(zone: 3, mode: .redFlag, sequence: 8, ttl: 30)
        let data = refresh.advertisingData()
        fixture.controllers[1].inject(FakeController.legacyEvent([FakeController.report(Self.beacon, data: data)]))
        #expect(await fixture.eventually { hub, _ in hub.counters.signals == signals + 1 })
        #expect(try await fixture.onLoop { $0.latest.decision.modeName } == "red_flag")
        _ = await fixture.stop()
    }

    @Test func anAdapterThatFailsForGoodLeavesTheOthersScanning() async throws {
        let refused: HCIScannerBackend.Opener = { () throws(HCIScannerError) -> any HCITransport in
            throw .permissionDenied(adapter: "hci1", operation: "open the raw HCI socket")
        }
        let fixture = try Fixture(openers: [0: refused])
        fixture.start()
        #expect(await fixture.waitFor(.degraded))
        let status = try await fixture.statusMessage()
        #expect(status.scanner.adapters.map(\.state) == [.down, .up])
        #expect(status.scanner.adapters[0].detail?.contains("hci1") == true)
        // hci2 still hears the flag.
        fixture.controllers[1].inject(
            FakeController.legacyEvent([FakeController.report(Self.beacon, data: Self.redFlag.advertisingData())]))
        #expect(await fixture.eventually { hub, _ in hub.latest.decision.modeName == "red_flag" })
        #expect(try #require(await fixture.stop()).isSuccess)
    }

    @Test func theSetFailsOnlyWhenEveryAdapterFailedForGood() async throws {
        let refused: HCIScannerBackend.Opener = { () throws(HCIScannerError) -> any HCITransport in
            throw .permissionDenied(adapter: "hci", operation: "open the raw HCI socket")
        }
        let fixture = try Fixture(openers: [0: refused, 1: refused])
        fixture.start()
        let outcome = await fixture.end()
        guard case .failure(let error) = outcome else {
            Issue.record("the set ended without the adapters' error: \(String(describing: outcome))")
            return
        }
        #expect(error is HCIScannerError)
        #expect(try await fixture.onLoop { $0.scanner.state } == .down)
    }
}

extension Result {
    var isSuccess: Bool {
        if case .success = self { return true }
        return false
    }
}

/// `scanner.adapter: auto` (issue 32): adapters the discovery finds join the set while it runs.
@Suite struct ScannerSetDiscoveryTests {
    /// The adapters the fake kernel has now.
    final class FakeKernel: Sendable {
        let names = Mutex<[String]>([])
        let controllers = Mutex<[String: FakeController]>([:])

        func plugIn(_ name: String) {
            let controller = FakeController(deviceID: UInt16(names.withLock { $0.count } + 1))
            controllers.withLock { $0[name] = controller }
            names.withLock { $0.append(name) }
        }

        func controller(_ name: String) -> FakeController? { controllers.withLock { $0[name] } }
    }

    static func set(kernel: FakeKernel, hub: TrackStateHub) throws -> ScannerSet {
        let discovery = try AdapterDiscovery(interval: 10_000, opensNotices: false) { kernel.names.withLock { $0 } }
        let makeMember: ScannerSet.MemberFactory = { name, index in
            let tag = ScannerAdapterTag(name: name, index: index, filtersCopies: true)
            let sink = HubAdvertisementSink(hub: hub, decoder: GeoRacingDecoder(), adapter: tag)
            var configuration = HCIScannerConfiguration(adapter: name, silenceRestart: 0)
            configuration.retryInitial = 20_000
            configuration.retryMax = 80_000
            let adapter = FakeAdapter(kernel.controller(name).map { [$0] } ?? [])
            let backend = try HCIScannerBackend(
                configuration: configuration, sink: sink, logger: HCITestLogger.quiet, opener: adapter.opener)
            return ScannerSet.Member(tag: tag, sink: sink, backend: backend)
        }
        return ScannerSet(members: [], hub: hub, discovery: discovery, makeMember: makeMember)
    }

    @Test func anAdapterPluggedInLaterJoinsTheScan() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let hub = TrackStateHub(
            eventLoop: group.next(), configuration: FusionConfiguration(), clock: BootClock(), backend: "hci",
            copyFilter: AdapterCopyFilter(window: 30_000_000), logger: Logger(label: "test"))
        let status = StatusBoard(hub: hub, publisher: TrackStatePublisher(connectedTo: hub))
        try await hub.eventLoop.submit { hub.start(checkClockEvery: nil) }.get()
        let kernel = FakeKernel()
        let set = try Self.set(kernel: kernel, hub: hub)
        status.add(set)
        let task = Task { try await set.run() }
        // No adapter yet: down, and saying why.
        #expect(await hub.eventually { $0.scannerHealth.detail?.contains("no Bluetooth adapter found yet") == true })
        #expect(try await hub.eventLoop.submit { hub.scanner.state }.get() == .down)

        kernel.plugIn("hci0")
        #expect(await hub.eventually { $0.scanner.state == .up && $0.scanner.adapters.map(\.name) == ["hci0"] })
        kernel.plugIn("hci3")
        #expect(
            await hub.eventually { $0.scanner.state == .up && $0.scanner.adapters.map(\.name) == ["hci0", "hci3"] })
        #expect(set.members.map(\.tag.index) == [0, 1])

        // The two found adapters hear one advert: it counts once.
        let data = ScannerSetTests.redFlag.advertisingData()
        for name in ["hci0", "hci3"] {
            kernel.controller(name)?.inject(
                FakeController.legacyEvent([FakeController.report(ScannerSetTests.beacon, data: data)]))
        }
        #expect(await hub.eventually { $0.copyCounters?.dropped == 1 && $0.counters.signals == 1 })
        let message = try await hub.eventLoop.submit { status.message() }.get()
        #expect(message.scanner.adapters.map(\.reports) == [1, 1])
        task.cancel()
        #expect((await task.result).isSuccess)
        try await hub.eventLoop.submit { hub.stop() }.get()
        try await group.shutdownGracefully()
    }
}
