import BLEPayload
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite struct CaptureReaderTests {
    static let stamp: Int64 = 1_778_932_800_123_456

    static func events(_ count: Int) throws -> [[UInt8]] {
        try (0..<count).map { index in
            try HCIEventEncoder.advertisingReport([geoReport(zone: UInt16(index), sequence: UInt16(index))])
        }
    }

    static func btsnoop(_ events: [[UInt8]]) -> [UInt8] {
        var bytes = BTSnoopWriter.fileHeader()
        for (index, event) in events.enumerated() {
            BTSnoopWriter.appendRecord(to: &bytes, timestamp: stamp + Int64(index), packet: HCIEventEncoder.h4(event))
        }
        return bytes
    }

    /// Expects the capture `bytes` to give one advertising report and `otherRecords` records that
    /// are not controller events; returns the report.
    @discardableResult
    static func expectOneReport(
        in bytes: [UInt8], otherRecords: Int, sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> OwnedAdvertisingReport? {
        let (reports, extractor) = try extractReports(bytes)
        #expect(reports.count == 1, sourceLocation: sourceLocation)
        #expect(extractor.counters.otherRecords == otherRecords, sourceLocation: sourceLocation)
        return reports.first
    }

    @Test func btsnoopWriterRoundTripsThroughReader() throws {
        let events = try Self.events(3)
        let (reports, extractor) = try extractReports(Self.btsnoop(events))
        #expect(reports.map(\.timestamp) == [Self.stamp, Self.stamp + 1, Self.stamp + 2])
        #expect(reports.count == 3)
        #expect(extractor.counters.records == 3)
        #expect(extractor.counters.hciEvents == 3)
    }

    @Test func btsnoopHeaderAndRecordAreByteExact() {
        var bytes = BTSnoopWriter.fileHeader(datalink: 1002)
        #expect(bytes == Array("btsnoop\0".utf8) + [0, 0, 0, 1, 0, 0, 0x03, 0xEA])
        BTSnoopWriter.appendRecord(to: &bytes, timestamp: 0, packet: [0x04, 0x0E, 0x00])
        let record = Array(bytes[16...])
        #expect(record[0..<16] == [0, 0, 0, 3, 0, 0, 0, 3, 0, 0, 0, 3, 0, 0, 0, 0])
        // Unix epoch in btsnoop time: 0x00DCDDB30F2F8000.
        #expect(record[16..<24] == [0x00, 0xDC, 0xDD, 0xB3, 0x0F, 0x2F, 0x80, 0x00])
    }

    @Test func btsnoop1001UsesFlagsToFindEvents() throws {
        var bytes = BTSnoopWriter.fileHeader(datalink: 1001)
        let event = try HCIEventEncoder.advertisingReport([geoReport()])
        BTSnoopWriter.appendRecord(to: &bytes, timestamp: Self.stamp, flags: 0x3, packet: event)
        // A command, then ACL data in.
        BTSnoopWriter.appendRecord(to: &bytes, timestamp: Self.stamp, flags: 0x2, packet: [0x01, 0x0C, 0x00])
        BTSnoopWriter.appendRecord(to: &bytes, timestamp: Self.stamp, flags: 0x1, packet: [0x01, 0x20, 0x00, 0x00])
        try Self.expectOneReport(in: bytes, otherRecords: 2)
    }

    @Test func btmonKeepsControllerIndexAndSkipsOtherOpcodes() throws {
        var bytes = BTSnoopWriter.fileHeader(datalink: 2001)
        let event = try HCIEventEncoder.advertisingReport([geoReport()])
        BTSnoopWriter.appendRecord(
            to: &bytes, timestamp: Self.stamp, flags: 0, packet: [UInt8](repeating: 0, count: 16)) // new index
        BTSnoopWriter.appendRecord(to: &bytes, timestamp: Self.stamp, flags: 2 << 16 | 3, packet: event)
        BTSnoopWriter.appendRecord(to: &bytes, timestamp: Self.stamp, flags: 2 << 16 | 2, packet: [0x01, 0x0C, 0x00])
        BTSnoopWriter.appendRecord(
            to: &bytes, timestamp: Self.stamp, flags: 0xFFFF << 16 | 12, packet: Array("note".utf8))
        let report = try Self.expectOneReport(in: bytes, otherRecords: 3)
        #expect(report?.controller == 2)
    }

    @Test(arguments: [(false, false), (false, true), (true, false), (true, true)])
    func pcapBothByteOrdersAndResolutions(bigEndian: Bool, nanoseconds: Bool) throws {
        var bytes = PcapWriter.fileHeader(linkType: 187, nanoseconds: nanoseconds, bigEndian: bigEndian)
        for event in try Self.events(2) {
            PcapWriter.appendRecord(
                to: &bytes, timestamp: Self.stamp, packet: HCIEventEncoder.h4(event),
                nanoseconds: nanoseconds, bigEndian: bigEndian)
        }
        let reader = try CaptureReader(bytes: bytes)
        #expect(reader.format == .pcap(linkType: 187, nanoseconds: nanoseconds, bigEndian: bigEndian))
        let (reports, _) = try extractReports(bytes)
        #expect(reports.map(\.timestamp) == [Self.stamp, Self.stamp])
    }

    @Test func pcap201SkipsDirectionHeader() throws {
        var bytes = PcapWriter.fileHeader(linkType: 201)
        let event = try HCIEventEncoder.advertisingReport([geoReport()])
        PcapWriter.appendRecord(to: &bytes, timestamp: Self.stamp, packet: [0, 0, 0, 1] + HCIEventEncoder.h4(event))
        PcapWriter.appendRecord(to: &bytes, timestamp: Self.stamp, packet: [0, 0, 0, 0, 0x01, 0x0C, 0x00])
        try Self.expectOneReport(in: bytes, otherRecords: 1)
    }

    @Test func pcap254ReadsMonitorHeaderBigEndian() throws {
        var bytes = PcapWriter.fileHeader(linkType: 254)
        let event = try HCIEventEncoder.advertisingReport([geoReport()])
        PcapWriter.appendRecord(to: &bytes, timestamp: Self.stamp, packet: [0x00, 0x01, 0x00, 0x03] + event)
        PcapWriter.appendRecord(to: &bytes, timestamp: Self.stamp, packet: [0x00, 0x01, 0x00])
        let reader = try CaptureReader(bytes: bytes)
        var extractor = AdvertisingExtractor()
        var controllers: [UInt16?] = []
        var problems: [RecordProblem] = []
        while let packet = try reader.next() {
            if let problem = extractor.process(packet, { controllers.append($0.controller) }) {
                problems.append(problem)
            }
        }
        #expect(controllers == [1])
        #expect(problems.count == 1)
        #expect(extractor.counters.malformedRecords == 1)
    }

    @Test(arguments: [false, true])
    func pcapngWithInterfacesResolutionsAndBlocks(bigEndian: Bool) throws {
        let event = try HCIEventEncoder.advertisingReport([geoReport()])
        var builder = PcapngBuilder(bigEndian: bigEndian)
        builder.interface(linkType: 187)
        builder.interface(linkType: 201, tsresol: 9)
        builder.interface(linkType: 187, tsresol: 0x80 | 20)
        builder.customBlock()
        builder.enhancedPacket(interface: 0, timestamp: UInt64(Self.stamp), packet: HCIEventEncoder.h4(event))
        builder.enhancedPacket(
            interface: 1, timestamp: UInt64(Self.stamp) * 1000 + 999, packet: [0, 0, 0, 1] + HCIEventEncoder.h4(event))
        builder.enhancedPacket(interface: 2, timestamp: 3 << 20 | 1 << 19, packet: HCIEventEncoder.h4(event))
        builder.simplePacket(HCIEventEncoder.h4(event))
        let (reports, extractor) = try extractReports(builder.bytes)
        #expect(reports.map(\.timestamp) == [Self.stamp, Self.stamp, 3_500_000, 0])
        #expect(extractor.counters.records == 4)
    }

    @Test func pcapngPacketForUndescribedInterfaceIsAnError() throws {
        var builder = PcapngBuilder()
        builder.interface(linkType: 187)
        builder.enhancedPacket(interface: 5, timestamp: 0, packet: [0x04, 0x0E, 0x00])
        #expect {
            _ = try extractReports(builder.bytes)
        } throws: { error in
            guard let error = error as? CaptureError, case .badBlock = error.kind else { return false }
            return error.recordIndex == 2 && error.offset == 28 + 20
        }
    }

    @Test func pcapngTrailingLengthMismatchIsAnError() {
        var builder = PcapngBuilder()
        builder.interface(linkType: 187)
        builder.bytes[builder.bytes.count - 1] ^= 0x40
        #expect(throws: CaptureError.self) { _ = try extractReports(builder.bytes) }
    }

    @Test func badMagicNamesTheFile() {
        #expect(throws: CaptureError(file: "x.cap", recordIndex: -1, offset: 0, kind: .badMagic)) {
            _ = try CaptureReader(bytes: Array("hello world, not a capture".utf8), name: "x.cap")
        }
    }

    @Test func unknownLinkTypesAreErrors() {
        #expect(throws: CaptureError(file: "<memory>", recordIndex: -1, offset: 12, kind: .unknownLinkType(1003))) {
            _ = try CaptureReader(bytes: BTSnoopWriter.fileHeader(datalink: 1003))
        }
        #expect(throws: CaptureError(file: "<memory>", recordIndex: -1, offset: 20, kind: .unknownLinkType(1))) {
            _ = try CaptureReader(bytes: PcapWriter.fileHeader(linkType: 1))
        }
        var builder = PcapngBuilder()
        builder.interface(linkType: 1)
        #expect(throws: CaptureError(file: "<memory>", recordIndex: 1, offset: 28, kind: .unknownLinkType(1))) {
            _ = try extractReports(builder.bytes)
        }
    }

    @Test func truncatedRecordKeepsEverythingBeforeIt() throws {
        let full = Self.btsnoop(try Self.events(3))
        let cut = Array(full.dropLast(5))
        let reader = try CaptureReader(bytes: cut, name: "cut.log")
        var extractor = AdvertisingExtractor()
        var seen = 0
        var caught: CaptureError?
        do {
            while let packet = try reader.next() { extractor.process(packet) { _ in seen += 1 } }
        } catch {
            caught = error
        }
        #expect(seen == 2)
        let recordLength = (full.count - 16) / 3
        #expect(caught?.file == "cut.log")
        #expect(caught?.recordIndex == 2)
        #expect(caught?.offset == Int64(16 + 2 * recordLength))
        if case .truncated(let needed, let available)? = caught?.kind {
            #expect(needed == recordLength)
            #expect(available == recordLength - 5)
        } else {
            Issue.record("expected a truncation, got \(String(describing: caught))")
        }
        #expect(caught?.description.hasPrefix("cut.log: record 2 at byte ") == true)
    }

    @Test func truncatedHeaderIsAnError() {
        #expect(throws: CaptureError.self) { _ = try CaptureReader(bytes: Array("btsnoop\0".utf8)) }
        #expect(throws: CaptureError.self) { _ = try CaptureReader(bytes: [0xD4, 0xC3]) }
    }

    @Test func absurdLengthIsAnError() throws {
        var bytes = BTSnoopWriter.fileHeader()
        BTSnoopWriter.appendRecord(to: &bytes, timestamp: 0, packet: [0x04, 0x0E, 0x00])
        // Claim an included length of 256 MiB in the second record.
        BTSnoopWriter.appendRecord(to: &bytes, timestamp: 0, packet: [0x04, 0x0E, 0x00])
        let second = 16 + 24 + 3
        bytes.replaceSubrange((second + 4)..<(second + 8), with: [0x10, 0x00, 0x00, 0x00])
        let reader = try CaptureReader(bytes: bytes)
        #expect(try reader.next() != nil)
        #expect(
            throws: CaptureError(
                file: "<memory>", recordIndex: 1, offset: Int64(second), kind: .absurdLength(0x1000_0000))
        ) {
            _ = try reader.next()
        }
    }

    @Test func emptyCaptureAfterHeaderHasNoRecords() throws {
        let reader = try CaptureReader(bytes: BTSnoopWriter.fileHeader())
        #expect(try reader.next() == nil)
        #expect(try reader.next() == nil)
    }

    @Test func streamsFromPipeWithBoundedBuffer() throws {
        // 40,000 records (~2 MB) through a pipe, read as they arrive.
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        let event = HCIEventEncoder.h4(try HCIEventEncoder.advertisingReport([geoReport()]))
        let writerFD = fds[1]
        let writer = Thread {
            var chunk = BTSnoopWriter.fileHeader()
            for index in 0..<40_000 {
                BTSnoopWriter.appendRecord(to: &chunk, timestamp: Int64(index), packet: event)
                if chunk.count > 60_000 || index == 39_999 {
                    chunk.withUnsafeBytes { raw in
                        var offset = 0
                        while offset < raw.count {
                            let written = write(writerFD, raw.baseAddress! + offset, raw.count - offset)
                            if written <= 0 { return }
                            offset += written
                        }
                    }
                    chunk.removeAll(keepingCapacity: true)
                }
            }
            close(writerFD)
        }
        writer.start()
        defer { close(fds[0]) }
        let reader = try CaptureReader(fileDescriptor: fds[0], name: "pipe")
        var extractor = AdvertisingExtractor()
        var count = 0
        while let packet = try reader.next() { extractor.process(packet) { _ in count += 1 } }
        #expect(count == 40_000)
        #expect(reader.bufferCapacity <= 256 * 1024)
    }

    @Test func timestampResolutionConversions() throws {
        // 2^-20 s units: 1.5 s; 10^-3 s units: 2.5 s.
        var builder = PcapngBuilder()
        builder.interface(linkType: 187, tsresol: 0x80 | 20)
        builder.interface(linkType: 187, tsresol: 3)
        let event = HCIEventEncoder.h4(try HCIEventEncoder.advertisingReport([geoReport()]))
        builder.enhancedPacket(interface: 0, timestamp: 3 << 19, packet: event)
        builder.enhancedPacket(interface: 1, timestamp: 2500, packet: event)
        let (reports, _) = try extractReports(builder.bytes)
        #expect(reports.map(\.timestamp) == [1_500_000, 2_500_000])
    }
}

/// A plain thread for feeding pipes in tests.
final class Thread: @unchecked Sendable {
    private let body: () -> Void
    private var handle = pthread_t()

    init(_ body: @escaping () -> Void) { self.body = body }

    func start() {
        let context = Unmanaged.passRetained(self).toOpaque()
        pthread_create(
            &handle, nil,
            { context in
                let thread = Unmanaged<Thread>.fromOpaque(context!).takeRetainedValue()
                thread.body()
                return nil
            }, context)
    }
}
