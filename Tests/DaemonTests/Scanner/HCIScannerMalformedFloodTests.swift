import BLEPayload
import BeacondTestSupport
import CircuitState
import Foundation
import Glibc
import Logging
import NIOPosix
import Synchronization
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// Issue 14, fault injection: the air through the hci backend. Malformed HCI events at 50,000 a
/// second from the fake controller (a socketpair), in process with the real hub: no crash, memory
/// flat, every malformed packet counted, and the good frames interleaved all reach the hub.
/// (Named HCIScanner… so `make test` runs it in the timed pass.)
@Suite struct HCIScannerMalformedFloodTests {
    final class ReaderEnded: Sendable {
        let flag = Atomic<Bool>(false)
    }

    /// Packets the backend must count as malformed, one count each (without the H4 byte unless
    /// `raw`).
    static let malformedKinds: [(raw: Bool, bytes: [UInt8])] = [
        (false, [0x3E, 0x20, 0x02, 0x01]), // says 32 bytes, carries 2
        (true, [0x04, 0x3E]), // no length byte
        (false, [0x3E, 0x05, 0x02, 0x01, 0x03, 0x00, 0xAA]), // a report cut off inside
        (false, [0x0E, 0x01, 0x01]), // Command Complete without its opcode
        (false, [0x3E, 0x03, 0x02, 0xFF, 0x00]), // 255 reports announced, none there
        // One report whose data length (0x1F) runs past the event's end.
        (false, [0x3E, 0x0D, 0x02, 0x01, 0x03, 0x01, 1, 2, 3, 4, 5, 6, 0x1F, 0x02, 0x01]),
    ]

    static func residentKilobytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in text.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return Int(line.dropFirst(6).split(whereSeparator: { $0 == " " || $0 == "\t" }).first ?? "") ?? 0
        }
        return 0
    }

    @Test func fiftyThousandMalformedEventsASecondLeaveTheGoodFramesThrough() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        var logger = Logger(label: "hci-flood")
        logger.logLevel = .critical
        let hub = TrackStateHub(
            eventLoop: group.next(), configuration: FusionConfiguration(), clock: BootClock(), backend: "hci",
            logger: logger)
        try await hub.eventLoop.submit { hub.start(checkClockEvery: nil) }.get()
        let sink = HubAdvertisementSink(hub: hub, decoder: GeoRacingDecoder())
        let controller = FakeController()
        let adapter = FakeAdapter([controller])
        var configuration = HCIScannerConfiguration(silenceRestart: 0)
        configuration.commandTimeout = 1_000_000
        let backend = try HCIScannerBackend(
            configuration: configuration, sink: sink, recorder: nil, logger: logger, opener: adapter.opener)
        let readerEnded = ReaderEnded()
        backend.start { _ in readerEnded.flag.store(true, ordering: .releasing) }
        defer { backend.stop() }
        #expect(await waitUntil { backend.counters.snapshot.events >= 5 })
        let rssBefore = Self.residentKilobytes()

        // 2 s at 50,000 packets a second, in slots of 10 ms; one good frame after every 999 bad ones,
        // a red flag in zone 1…100 with its sequence counting up, the last an evacuation in zone 9.
        let perSlot = 500
        let slots = 200
        var malformed = 0
        var good: [GeoRacingSignal] = []
        let started = MonotonicClock.micros()
        for slot in 0..<slots {
            for index in 0..<perSlot {
                let packet = slot * perSlot + index
                if packet % 1000 == 999 {
                    let last = packet == slots * perSlot - 1
                    let signal = GeoRacingSignal.circuit(
                        zone: last ? 9 : UInt16(good.count % 100 + 1), mode: last ? .evacuation : .redFlag,
                        sequence: UInt16(good.count + 1), ttl: 60)
                    good.append(signal)
                    let address = 0xC0_FF_EE_00_00_00 + UInt64(good.count)
                    controller.inject(
                        FakeController.legacyEvent([FakeController.report(address, data: signal.advertisingData())]))
                } else {
                    let kind = Self.malformedKinds[packet % Self.malformedKinds.count]
                    if kind.raw { controller.injectRaw(kind.bytes) } else { controller.inject(kind.bytes) }
                    malformed += 1
                }
            }
            let due = started + Int64(slot + 1) * 10_000
            let now = MonotonicClock.micros()
            if due > now { usleep(UInt32(due - now)) }
        }
        let seconds = Double(MonotonicClock.micros() - started) / 1_000_000
        let total = malformed + good.count
        #expect(await waitUntil(within: 10) { backend.counters.snapshot.malformed >= malformed })
        var signalsArrived = false
        for _ in 0..<1000 where !signalsArrived {
            let signals = try await hub.eventLoop.submit { hub.counters.signals }.get()
            signalsArrived = signals + sink.counters.droppedSignals >= good.count
            if !signalsArrived { try await Task.sleep(for: .milliseconds(10)) }
        }
        #expect(signalsArrived)
        let rssAfter = Self.residentKilobytes()
        let counters = backend.counters.snapshot
        let (signals, mode, zone) = try await hub.eventLoop.submit {
            (hub.counters.signals, hub.latest.decision.modeName, hub.latest.zone)
        }.get()
        print(
            """
            fault air hci flood: \(total) packets in \(String(format: "%.2f", seconds)) s \
            (\(Int(Double(total) / seconds)) a second), \(counters.malformed) counted malformed, \
            \(good.count) good frames, \(signals) reached the hub, \(sink.counters.droppedSignals) dropped; \
            RSS \(rssBefore) → \(rssAfter) KiB; last malformed: \(backend.counters.lastMalformed ?? "none")
            """)
        // Paced for 50,000 a second; a send blocks while the backend's socket buffer is full, so on a
        // loaded machine the rate achieved is what the backend kept up with (figures in the doc).
        #expect(Double(total) / seconds > 10_000, "the flood ran below 10,000 packets a second")
        #expect(counters.malformed == malformed)
        #expect(counters.reports == good.count)
        #expect(signals == good.count)
        #expect(mode == "evacuation" && zone == 9)
        #expect(rssAfter - rssBefore < 32 * 1024, "RSS grew by \(rssAfter - rssBefore) KiB")
        #expect(backend.counters.lastMalformed != nil)
        // The reader thread may still be handing a burst to the hub's loop: it ends before the loop does.
        backend.stop()
        #expect(await waitUntil { readerEnded.flag.load(ordering: .acquiring) })
        try await hub.eventLoop.submit { hub.stop() }.get()
        try await group.shutdownGracefully()
    }
}
