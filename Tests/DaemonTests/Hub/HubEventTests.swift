import BLEPayload
import CircuitState
import Logging
import NIOEmbedded
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// Issue 27, item 2: the hub emits one event per publication, beacon update and remote fetch, to
/// its outputs in the order connected; it renders beacon reports only while an output wants them.
@Suite struct HubEventTests {
    static let second: Int64 = 1_000_000

    /// Records every event it receives, tagged with its name, into a shared log.
    final class LoggingOutput: HubOutput {
        let name: String
        var wantsBeaconUpdates: Bool
        let log: (String) -> Void

        init(_ name: String, wantsBeaconUpdates: Bool = false, log: @escaping (String) -> Void) {
            self.name = name
            self.wantsBeaconUpdates = wantsBeaconUpdates
            self.log = log
        }

        func receive(_ event: HubEvent) {
            switch event {
            case .published(let publication): log("\(name) state \(publication.seq) \(publication.message.mode)")
            case .beaconUpdate(let update): log("\(name) beacon \(update.key) rssi \(update.report.rssi ?? 0)")
            case .remoteFetched(let snapshot): log("\(name) remote \(snapshot.globalMode ?? "-")")
            }
        }
    }

    func makeHub() -> (TrackStateHub, EmbeddedEventLoop, ManualClock) {
        let loop = EmbeddedEventLoop()
        let clock = ManualClock(1_000 * Self.second)
        let hub = TrackStateHub(testingOn: loop, clock: clock)
        return (hub, loop, clock)
    }

    @Test func everyEventReachesTheOutputsInTheOrderConnected() {
        let (hub, _, clock) = makeHub()
        var log: [String] = []
        let first = LoggingOutput("first", wantsBeaconUpdates: true) { log.append($0) }
        let second = LoggingOutput("second") { log.append($0) }
        hub.connect([first, second])
        hub.start(checkClockEvery: nil)
        defer { hub.stop() }
        clock.time += Self.second
        hub.ingest(
            .circuit(zone: 2, mode: .redFlag, sequence: 1), address: BluetoothAddress(rawValue: 1), rssi: -60,
            txPower: nil)
        hub.remoteFetched(RemoteSnapshot(globalMode: "YELLOW"))
        #expect(
            log == [
                "first state 1 unknown", "second state 1 unknown",
                "first state 2 red_flag", "second state 2 red_flag",
                "first beacon zone 2 @ 00:00:00:00:00:01 rssi -60", "second beacon zone 2 @ 00:00:00:00:00:01 rssi -60",
                // Race control's state changes what is shown (its part), then the fetch itself.
                "first state 3 red_flag", "second state 3 red_flag", "first remote YELLOW", "second remote YELLOW",
            ])
    }

    @Test func beaconReportsAreMadeOnlyWhileAnOutputWantsThem() {
        let (hub, loop, clock) = makeHub()
        var updates: [String] = []
        let output = LoggingOutput("out") { if $0.contains("beacon") { updates.append($0) } }
        hub.connect([output])
        hub.start(checkClockEvery: nil)
        defer { hub.stop() }
        let address = BluetoothAddress(rawValue: 7)
        func hear(rssi: Int8) {
            clock.time += 1000
            hub.ingest(.circuit(zone: 1, mode: .normal, sequence: 1), address: address, rssi: rssi, txPower: nil)
        }
        hear(rssi: -50)
        loop.advanceTime(by: .microseconds(TrackStateHub.beaconUpdateInterval))
        #expect(updates.isEmpty)
        output.wantsBeaconUpdates = true
        hear(rssi: -51)
        hear(rssi: -52)
        // The first at once, the second held to the end of its window.
        #expect(updates == ["out beacon zone 1 @ 00:00:00:00:00:07 rssi -51"])
        // Nobody wants them by then: the held update is not rendered.
        output.wantsBeaconUpdates = false
        loop.advanceTime(by: .microseconds(TrackStateHub.beaconUpdateInterval))
        #expect(updates.count == 1)
        output.wantsBeaconUpdates = true
        hear(rssi: -53)
        loop.advanceTime(by: .microseconds(TrackStateHub.beaconUpdateInterval))
        #expect(updates.count == 2)
        #expect(updates.last == "out beacon zone 1 @ 00:00:00:00:00:07 rssi -53")
        #expect(hub.counters.beaconUpdatesDropped == 0)
    }

    @Test func outputsAreConnectedBeforeTheHubStartsOnly() async {
        await #expect(processExitsWith: .failure) {
            let (hub, _, _) = HubEventTests().makeHub()
            hub.start(checkClockEvery: nil)
            hub.connect([LoggingOutput("late") { _ in }])
        }
    }
}

/// The status board: the hub's part, then each contributor's in the order added; contributors
/// are held weakly; a devices request with no devices table gets an empty list.
@Suite struct StatusBoardTests {
    final class Part: StatusContributor {
        let text: String
        init(_ text: String) { self.text = text }
        func contribute(to status: inout StatusMessage, for query: StatusQuery) {
            status.scanner.detail = (status.scanner.detail ?? "") + text + (query.devices ? "+d" : "")
        }
    }

    @Test func contributorsAddTheirPartsInOrderAndAreHeldWeakly() {
        let (hub, _, _) = HubEventTests().makeHub()
        hub.start(checkClockEvery: nil)
        defer { hub.stop() }
        let board = StatusBoard(hub: hub)
        let first = Part("a")
        var second: Part? = Part("b")
        board.add(first)
        board.add(second!)
        #expect(board.message().scanner.detail == "ab")
        #expect(board.message(devices: true).scanner.detail == "a+db+d")
        #expect(board.message(devices: true).devices == [])
        second = nil
        #expect(board.message().scanner.detail == "a")
        withExtendedLifetime(first) {}
    }
}
