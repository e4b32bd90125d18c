import BLEPayload
import BeacondTestSupport
import CircuitState
import Foundation
import Logging
import NIOCore
import NIOPosix
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// The sinks live backends feed: the daemon's (decode, batch, hand to the hub) and `scan`'s (print).
@Suite struct AdvertisementSinkTests {
    static let redFlag = GeoRacingSignal.circuit(zone: 3, mode: .redFlag, sequence: 7, ttl: 30)
    static let address = BluetoothAddress(rawValue: 0xC0_FF_EE_00_00_01)

    /// Calls `body` with a report carrying `ad` (AD structures), as a backend would.
    static func withReport(
        _ ad: [UInt8], address: BluetoothAddress = address, rssi: Int8? = -60, _ body: (AdvertisingReport) -> Void
    ) {
        ad.withUnsafeBytes { bytes in
            body(
                AdvertisingReport(
                    timestamp: 1_790_000_000_000_000, origin: .legacyReport, kind: .advNonconnInd,
                    properties: ExtendedEventProperties(legacy: .advNonconnInd), addressType: .randomDevice,
                    address: address, rssi: rssi, data: AdvertisingData(bytes)))
        }
    }

    /// Everything written to `descriptor` until its other end closes.
    static func readToEnd(_ descriptor: Int32) -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count <= 0 { return bytes }
            bytes += chunk[0..<count]
        }
    }

    static func frame(_ signal: GeoRacingSignal, companyID: UInt16 = GeoRacingSignal.defaultCompanyID) -> [UInt8] {
        var builder = AdvertisingDataBuilder()
        builder.appendFlags(0x06)
        builder.appendManufacturerData(companyID: companyID, payload: signal.encoded())
        return builder.bytes
    }

    final class Fixture: @unchecked Sendable {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let hub: TrackStateHub
        let publisher: TrackStatePublisher
        let status: StatusBoard
        let sink: HubAdvertisementSink

        init() throws {
            hub = TrackStateHub(
                eventLoop: group.next(), configuration: FusionConfiguration(), clock: BootClock(),
                backend: "hci", logger: Logger(label: "test"))
            publisher = TrackStatePublisher(connectedTo: hub)
            status = StatusBoard(hub: hub, publisher: publisher)
            sink = HubAdvertisementSink(hub: hub, decoder: GeoRacingDecoder())
            try hub.eventLoop.submit { [hub] in hub.start(checkClockEvery: nil) }.wait()
        }

        func onLoop<T: Sendable>(_ body: @escaping @Sendable (TrackStateHub) -> T) throws -> T {
            try hub.eventLoop.submit { [hub] in body(hub) }.wait()
        }

        deinit {
            try? hub.eventLoop.submit { [hub] in hub.stop() }.wait()
            try? group.syncShutdownGracefully()
        }
    }

    @Test func aBurstReachesTheEngineAtItsReceptionTime() throws {
        let fixture = try Fixture()
        let received = MonotonicClock.bootMicros()
        Self.withReport(Self.frame(Self.redFlag)) { fixture.sink.receive($0, bootMicros: received) }
        var other = AdvertisingDataBuilder()
        other.appendLocalName("headphones")
        Self.withReport(other.bytes, address: BluetoothAddress(rawValue: 0x11)) {
            fixture.sink.receive($0, bootMicros: received)
        }
        // The GeoRacing company id with a payload of the wrong length: a rejected frame.
        var bad = AdvertisingDataBuilder()
        bad.appendManufacturerData(companyID: GeoRacingSignal.defaultCompanyID, payload: [1, 2, 3])
        Self.withReport(bad.bytes) { fixture.sink.receive($0, bootMicros: received) }

        // Nothing reaches the hub before the burst ends.
        #expect(try fixture.onLoop { $0.counters.signals } == 0)
        fixture.sink.flush()
        let (signals, rejected, mode, source, override) = try fixture.onLoop { hub in
            (
                hub.counters.signals, hub.counters.rejectedFrames, hub.latest.decision.modeName, hub.latest.source,
                hub.engine.activeOverrides(at: received).first
            )
        }
        #expect(signals == 1)
        #expect(rejected == 1)
        #expect(mode == "red_flag")
        #expect(source == .beacon)
        #expect(override?.key == OverrideKey(signal: Self.redFlag, address: Self.address))
        // Stamped with the reception time: it expires 30 s after it, not after the hub saw it.
        #expect(override.map { $0.expiresAt == received + 30_000_000 } == true)
        #expect(fixture.sink.counters.reports == 3)
        #expect(fixture.sink.counters.droppedSignals == 0)
    }

    @Test func aFullBatchIsHandedOverWithoutWaitingForTheBurstToEnd() throws {
        let fixture = try Fixture()
        let now = MonotonicClock.bootMicros()
        for index in 0..<HubAdvertisementSink.batchLimit {
            let signal = GeoRacingSignal.circuit(zone: 1, mode: .normal, sequence: UInt16(index), ttl: 10)
            Self.withReport(Self.frame(signal), address: BluetoothAddress(rawValue: UInt64(0x100 + index))) {
                fixture.sink.receive($0, bootMicros: now)
            }
        }
        #expect(try fixture.onLoop { $0.counters.signals } == HubAdvertisementSink.batchLimit)
    }

    @Test func aStalledLoopDropsAndCountsBurstsInsteadOfQueueingThem() throws {
        let fixture = try Fixture()
        let gate = DispatchSemaphore(value: 0)
        // Stall the hub's loop until the bursts are handed over.
        fixture.hub.eventLoop.execute { gate.wait() }
        let bursts = HubAdvertisementSink.maxBatchesInFlight + 10
        let now = MonotonicClock.bootMicros()
        for burst in 0..<bursts {
            for beacon in 0..<3 {
                let signal = GeoRacingSignal.circuit(zone: 1, mode: .normal, sequence: UInt16(burst), ttl: 10)
                Self.withReport(Self.frame(signal), address: BluetoothAddress(rawValue: UInt64(0x200 + beacon))) {
                    fixture.sink.receive($0, bootMicros: now)
                }
            }
            fixture.sink.flush()
        }
        #expect(fixture.sink.counters.droppedSignals == 10 * 3)
        gate.signal()
        #expect(try fixture.onLoop { $0.counters.signals } == HubAdvertisementSink.maxBatchesInFlight * 3)
        // Once the loop catches up, bursts go through again.
        Self.withReport(Self.frame(Self.redFlag)) { fixture.sink.receive($0, bootMicros: now) }
        fixture.sink.flush()
        #expect(try fixture.onLoop { $0.latest.decision.modeName } == "red_flag")
        #expect(fixture.sink.counters.droppedSignals == 30)
    }

    @Test func scannerStateChangesArePublishedAndTheDetailShowsInStatus() throws {
        let fixture = try Fixture()
        let sink = fixture.sink
        // As the daemon wires it: the scanner set, holding the sink, adds the scan counters.
        let board = fixture.status
        let backend = try HCIScannerBackend(
            configuration: HCIScannerConfiguration(), sink: sink, logger: HCITestLogger.quiet)
        let set = ScannerSet(
            members: [
                ScannerSet.Member(
                    tag: ScannerAdapterTag(name: "hci0", index: 0, filtersCopies: false), sink: sink, backend: backend)
            ], hub: fixture.hub)
        try fixture.onLoop { _ in board.add(set) }
        fixture.sink.scannerStateChanged(.up, detail: nil)
        let seqUp = try fixture.onLoop { hub in (hub.scanner.state, hub.seq) }
        #expect(seqUp.0 == .up)
        fixture.sink.scannerStateChanged(.down, detail: "adapter hci0 is gone; retrying in 2 s")
        let (state, seq, status) = try fixture.onLoop { hub in (hub.scanner.state, hub.seq, board.line()) }
        #expect(state == .down)
        #expect(seq == seqUp.1 + 1)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(status)) as? [String: Any])
        let scanner = try #require(object["scanner"] as? [String: Any])
        #expect(scanner["state"] as? String == "down")
        #expect(scanner["detail"] as? String == "adapter hci0 is gone; retrying in 2 s")
        let scan = try #require(object["scan"] as? [String: Any])
        #expect(scan["dropped_signals"] as? Int == 0)
        withExtendedLifetime(set) {}
    }

    @Test func scanPrintsExactlyWhatReplayPrints() throws {
        var pipe: [Int32] = [0, 0]
        #expect(pipe.withUnsafeMutableBufferPointer { Glibc.pipe($0.baseAddress) } == 0)
        defer { close(pipe[0]) }
        let formatter = ReportFormatter(decoder: GeoRacingDecoder())
        let output = OutputStream(fd: pipe[1])
        let sink = PrintingAdvertisementSink(
            printer: ReportPrinter(formatter: formatter, all: false, json: true, output: output))
        var other = AdvertisingDataBuilder()
        other.appendLocalName("headphones")
        Self.withReport(other.bytes) { sink.receive($0, bootMicros: 0) }
        var expected = JSONWriter(capacity: 1024)
        Self.withReport(Self.frame(Self.redFlag)) { report in
            sink.receive(report, bootMicros: 0)
            formatter.json(report, match: formatter.decoder.decode(report.data), into: &expected)
            expected.newline()
        }
        sink.flush()
        close(pipe[1])
        let printed = Self.readToEnd(pipe[0])
        // Only the GeoRacing report (no --all), in replay's JSON shape.
        #expect(printed == expected.bytes)
        #expect(sink.summary(elapsedMicros: 1_000_000).hasPrefix("scan: 2 reports, 1 GeoRacing signals"))
    }

    /// `scan` with several adapters: one printer, each line naming the adapter that heard it.
    @Test func scanWithSeveralAdaptersNamesTheAdapterOnEachLine() throws {
        var pipe: [Int32] = [0, 0]
        #expect(pipe.withUnsafeMutableBufferPointer { Glibc.pipe($0.baseAddress) } == 0)
        defer { close(pipe[0]) }
        let formatter = ReportFormatter(decoder: GeoRacingDecoder())
        let printer = ScanPrinter(
            ReportPrinter(formatter: formatter, all: false, json: true, output: OutputStream(fd: pipe[1])))
        let sinks = ["hci1", "hci2"].map { PrintingAdvertisementSink(printer: printer, adapter: $0) }
        for sink in sinks {
            Self.withReport(Self.frame(Self.redFlag)) { sink.receive($0, bootMicros: 0) }
            sink.flush()
        }
        close(pipe[1])
        let printed = Self.readToEnd(pipe[0])
        let lines = String(decoding: printed, as: UTF8.self).split(separator: "\n")
        #expect(lines.count == 2)
        #expect(lines.first?.contains(#""adapter":"hci1""#) == true)
        #expect(lines.last?.contains(#""adapter":"hci2""#) == true)
        #expect(printer.summary(elapsedMicros: 1_000_000).hasPrefix("scan: 2 reports, 2 GeoRacing signals"))
        var row: [UInt8] = []
        Self.withReport(Self.frame(Self.redFlag)) { report in
            formatter.row(report, match: formatter.decoder.decode(report.data), adapter: "hci2", into: &row)
        }
        #expect(String(decoding: row, as: UTF8.self).contains("  hci2: v1 zone 3 RED FLAG"))
    }
}
