import BLEPayload
import BeacondTestSupport
import CLinux
import Glibc
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// Batched reads of the HCI socket (`recvmmsg`, `HCIReadBatch`): the packets queued are read
/// several per call, handled in order, and flushed to the sink once per burst.
@Suite struct HCIScannerBatchReadTests {
    /// A fake controller and a channel on its transport with its sink and counters, read by the
    /// test itself (no reader thread), so the packets injected beforehand are all queued when
    /// `readBurst` starts.
    static func channel() -> (
        controller: FakeController, sink: RecordingSink, counters: HCIScannerCounters, channel: HCICommandChannel
    ) {
        let controller = FakeController()
        let sink = RecordingSink()
        let counters = HCIScannerCounters()
        let channel = HCICommandChannel(
            transport: controller.transport, adapter: "hci-test", sink: sink, recorder: nil, counters: counters,
            wake: nil)
        return (controller, sink, counters, channel)
    }

    static func event(_ address: UInt64) -> [UInt8] {
        FakeController.legacyEvent([FakeController.report(address, data: [0x02, 0x01, 0x06])])
    }

    /// More packets than one read takes, with an extended report whose two fragments straddle
    /// the boundary between the first and the second batch: all in order, one flush.
    @Test func eventsSplitAcrossBatchesAreAllDeliveredInOrderWithOneFlush() throws {
        let (controller, sink, counters, channel) = Self.channel()
        let perRead = HCICommandChannel.packetsPerRead
        let data = (0..<300).map { UInt8(truncatingIfNeeded: $0 * 5) }
        let long = OwnedAdvertisingReport(
            origin: .extendedReport, kind: .extended, properties: ExtendedEventProperties(rawValue: 0),
            address: BluetoothAddress(rawValue: 0xE0), rssi: -50, sid: 2, data: data)
        let fragments = HCIEventEncoder.extendedFragments(of: long, chunk: 200)
        #expect(fragments.count == 2)
        let total = 2 * perRead + 22
        var expected: [UInt64] = []
        for index in 0..<total {
            if index == perRead - 1 {
                controller.inject(try HCIEventEncoder.extendedAdvertisingReport([fragments[0]]))
            } else if index == perRead {
                controller.inject(try HCIEventEncoder.extendedAdvertisingReport([fragments[1]]))
                expected.append(0xE0)
            } else {
                controller.inject(Self.event(UInt64(0x1000 + index)))
                expected.append(UInt64(0x1000 + index))
            }
        }
        #expect(channel.readBurst() == .drained(packets: total))
        let snapshot = sink.snapshot
        #expect(snapshot.reports.map(\.address.rawValue) == expected)
        #expect(snapshot.reports.first { $0.address.rawValue == 0xE0 }?.data == data)
        #expect(snapshot.flushes == 1 && snapshot.unflushed == 0)
        #expect(counters.snapshot.events == total && counters.snapshot.malformed == 0)
        #expect(channel.readBurst() == .drained(packets: 0))
    }

    /// A malformed packet between good ones in one batch is counted and skipped; the packets
    /// after it in the same batch are still handled.
    @Test func aMalformedEventInTheMiddleOfABatchIsSkipped() throws {
        let (controller, sink, counters, channel) = Self.channel()
        controller.inject(Self.event(1))
        controller.inject([0x3E, 0x20, 0x02, 0x01]) // says 32 parameter bytes, carries 2
        controller.inject(Self.event(2))
        controller.injectRaw([0x02, 0x00, 0x20]) // ACL data: not an event, ignored
        controller.inject([0x3E, 0x05, 0x02, 0x01, 0x03, 0x00, 0xAA]) // a report cut off inside
        controller.inject(Self.event(3))
        #expect(channel.readBurst() == .drained(packets: 6))
        #expect(sink.reports.map(\.address.rawValue) == [1, 2, 3])
        #expect(sink.flushCount == 1)
        #expect(counters.snapshot.malformed == 2)
        #expect(counters.snapshot.reports == 3)
        #expect(counters.lastMalformed?.hasPrefix("LE Meta event") == true)
    }

    /// The controller's end closing after some packets: those are delivered first, then the loss.
    @Test func packetsBeforeTheSocketClosedAreDeliveredThenTheLossReported() throws {
        let (controller, sink, _, channel) = Self.channel()
        controller.inject(Self.event(1))
        controller.inject(Self.event(2))
        controller.close()
        #expect(channel.readBurst() == .lost(reason: "its socket was closed"))
        #expect(sink.reports.map(\.address.rawValue) == [1, 2])
        #expect(sink.flushCount == 1)
    }

    /// recvmmsg on the socketpair types the scanner meets (see `HCIReadBatch`): packet
    /// boundaries kept, at most one packet per slot, a long packet cut to its slot, "drained"
    /// when the queue ran out, and the end of a SOCK_SEQPACKET peer seen as `.closed`. An AF_UNIX
    /// SOCK_RAW socketpair is a datagram pair to the kernel: it has no end-of-stream.
    @Test(arguments: [SOCK_SEQPACKET, SOCK_RAW])
    func recvmmsgKeepsPacketBoundariesOnSocketpairs(type: __socket_type) throws {
        var pair: [Int32] = [-1, -1]
        try #require(socketpair(AF_UNIX, Int32(type.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0)
        let transport = DescriptorHCITransport(descriptor: pair[0])
        let packets: [[UInt8]] = (1...5).map { size in (0..<size * 3).map { UInt8($0) } }
        for packet in packets {
            #expect(packet.withUnsafeBytes { send(pair[1], $0.baseAddress, $0.count, 0) } == packet.count)
        }
        let batch = HCIReadBatch(capacity: 3, slotSize: 10)
        #expect(transport.readBatch(into: batch) == .packets(count: 3, drained: false))
        #expect((0..<3).map { Array(batch.packet($0)) } == Array(packets[0..<3]))
        #expect(transport.readBatch(into: batch) == .packets(count: 2, drained: true))
        #expect(Array(batch.packet(0)) == packets[3][0..<10].map { $0 }) // 12 bytes, cut to the slot's 10
        #expect(Array(batch.packet(1)) == packets[4][0..<10].map { $0 })
        #expect(transport.readBatch(into: batch) == .wouldBlock)
        close(pair[1])
        let end = transport.readBatch(into: batch)
        #expect(end == (type == SOCK_SEQPACKET ? .closed : .wouldBlock))
    }
}
