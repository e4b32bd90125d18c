import BLEPayload
import BeacondTestSupport
import Testing

/// Capture times at the ends of their ranges, and fuzz-like mutations of every capture format:
/// each record either reads with the right time or fails with a typed error naming its record
/// and byte offset. A trap would end the test process.
@Suite struct CaptureTimeExtremesTests {
    static let event: [UInt8] = {
        (try? HCIEventEncoder.advertisingReport([geoReport()])) ?? []
    }()

    /// Reads every record; the timestamps, or the error that stopped the reader.
    static func readAll(_ bytes: [UInt8]) -> (times: [Int64], error: CaptureError?) {
        var times: [Int64] = []
        do {
            let reader = try CaptureReader(bytes: bytes)
            var extractor = AdvertisingExtractor()
            while let packet = try reader.next() {
                times.append(packet.timestamp)
                extractor.process(packet) { _ in }
            }
            return (times, nil)
        } catch {
            return (times, error)
        }
    }

    // MARK: btsnoop

    static let btsnoopExtremes: [Int64] = [.min, .min + 1, -1, 0, 1, BTSnoopWriter.latestTimestamp]

    @Test(arguments: [UInt32(1001), 1002, 2001])
    func btsnoopRoundTripsEveryRepresentableExtreme(datalink: UInt32) throws {
        var bytes = BTSnoopWriter.fileHeader(datalink: datalink)
        let packet = datalink == 1002 ? HCIEventEncoder.h4(Self.event) : Self.event
        let flags: UInt32 = datalink == 2001 ? 3 : 0x3
        for stamp in Self.btsnoopExtremes {
            BTSnoopWriter.appendRecord(to: &bytes, timestamp: stamp, flags: flags, packet: packet)
        }
        let (reports, _) = try extractReports(bytes)
        #expect(reports.map(\.timestamp) == Self.btsnoopExtremes)
    }

    @Test func btsnoopTimeBeforeInt64MicrosSince1970IsAnErrorWithItsPlace() throws {
        var bytes = BTSnoopWriter.fileHeader()
        let packet = HCIEventEncoder.h4(Self.event)
        BTSnoopWriter.appendRecord(to: &bytes, timestamp: 7, packet: packet)
        let second = bytes.count
        BTSnoopWriter.appendRecord(to: &bytes, timestamp: 0, packet: packet)
        // A raw stamp of Int64.min µs after year 0 is 2^63 - 0x00DCDDB30F2F8000 µs before Int64.min.
        bytes.replaceSubrange(second + 16..<second + 24, with: [0x80, 0, 0, 0, 0, 0, 0, 0])
        let (times, error) = Self.readAll(bytes)
        #expect(times == [7])
        let failure = try #require(error)
        #expect(failure.recordIndex == 1)
        #expect(failure.offset == Int64(second))
        guard case .timestampOutOfRange = failure.kind else {
            Issue.record("expected timestampOutOfRange, got \(failure)")
            return
        }
        #expect(failure.description.contains("record 1 at byte \(second): timestamp out of range"))
    }

    @Test func btsnoopWriterPastItsRangeReadsBackAsAnErrorNotAWrongTime() throws {
        var bytes = BTSnoopWriter.fileHeader()
        BTSnoopWriter.appendRecord(to: &bytes, timestamp: .max, packet: HCIEventEncoder.h4(Self.event))
        let (times, error) = Self.readAll(bytes)
        #expect(times.isEmpty)
        #expect(
            error?.kind
                == .timestampOutOfRange(
                    "btsnoop time \(Int64.max &+ CaptureReader.btsnoopEpochOffset) µs since year 0 "
                        + "is before Int64 µs since 1970"))
    }

    // MARK: pcap

    static let pcapCases = [(false, false), (false, true), (true, false), (true, true)]

    @Test(arguments: pcapCases)
    func pcapRoundTripsItsWholeRange(bigEndian: Bool, nanoseconds: Bool) throws {
        let stamps: [Int64] = [0, 1, 999_999, 1_000_000, Int64(UInt32.max) * 1_000_000 + 999_999]
        var bytes = PcapWriter.fileHeader(linkType: 187, nanoseconds: nanoseconds, bigEndian: bigEndian)
        for stamp in stamps {
            PcapWriter.appendRecord(
                to: &bytes, timestamp: stamp, packet: HCIEventEncoder.h4(Self.event),
                nanoseconds: nanoseconds, bigEndian: bigEndian)
        }
        // Outside 0..<2^32 s the seconds wrap, the fraction stays the true one: no trap.
        for stamp in [Int64.min, -1, Int64.max] {
            PcapWriter.appendRecord(
                to: &bytes, timestamp: stamp, packet: HCIEventEncoder.h4(Self.event),
                nanoseconds: nanoseconds, bigEndian: bigEndian)
        }
        let (times, error) = Self.readAll(bytes)
        #expect(error == nil)
        let wrapped = [Int64.min, -1, Int64.max].map { stamp -> Int64 in
            let negative = stamp % 1_000_000 < 0
            let floorSeconds = stamp / 1_000_000 - (negative ? 1 : 0)
            let fraction = stamp % 1_000_000 + (negative ? 1_000_000 : 0)
            return Int64(UInt32(truncatingIfNeeded: floorSeconds)) * 1_000_000 + fraction
        }
        #expect(times == stamps + wrapped)
        #expect(wrapped[1] == Int64(UInt32.max) * 1_000_000 + 999_999)
    }

    @Test(arguments: pcapCases)
    func pcapFractionOfOneSecondOrMoreIsAnError(bigEndian: Bool, nanoseconds: Bool) throws {
        for fraction in [nanoseconds ? UInt32(1_000_000_000) : 1_000_000, UInt32.max] {
            var bytes = PcapWriter.fileHeader(linkType: 187, nanoseconds: nanoseconds, bigEndian: bigEndian)
            PcapWriter.appendRecord(
                to: &bytes, timestamp: 5, packet: HCIEventEncoder.h4(Self.event),
                nanoseconds: nanoseconds, bigEndian: bigEndian)
            let second = bytes.count
            PcapWriter.appendRecord(
                to: &bytes, timestamp: 5, packet: HCIEventEncoder.h4(Self.event),
                nanoseconds: nanoseconds, bigEndian: bigEndian)
            let raw = bigEndian ? fraction.bigEndian : fraction.littleEndian
            withUnsafeBytes(of: raw) { bytes.replaceSubrange(second + 4..<second + 8, with: $0) }
            let (times, error) = Self.readAll(bytes)
            #expect(times == [5])
            let failure = try #require(error)
            #expect(failure.recordIndex == 1 && failure.offset == Int64(second))
            #expect(failure.reason.hasPrefix("timestamp out of range: fraction \(fraction)"))
        }
    }

    @Test(arguments: pcapCases)
    func pcapExtremeLengthsAreErrors(bigEndian: Bool, nanoseconds: Bool) throws {
        for included in [UInt32.max, UInt32(CaptureReader.maxRecordLength + 1), 1000] {
            var bytes = PcapWriter.fileHeader(linkType: 187, nanoseconds: nanoseconds, bigEndian: bigEndian)
            PcapWriter.appendRecord(
                to: &bytes, timestamp: 1, packet: [0x04],
                nanoseconds: nanoseconds, bigEndian: bigEndian)
            let raw = bigEndian ? included.bigEndian : included.littleEndian
            withUnsafeBytes(of: raw) { bytes.replaceSubrange(24 + 8..<24 + 12, with: $0) }
            let (times, error) = Self.readAll(bytes)
            #expect(times.isEmpty)
            let failure = try #require(error)
            #expect(failure.recordIndex == 0 && failure.offset == 24)
            switch failure.kind {
            case .absurdLength(let length): #expect(length == Int(included))
            case .truncated(let needed, _): #expect(needed == 16 + Int(included))
            default: Issue.record("unexpected \(failure)")
            }
        }
    }

    // MARK: pcapng

    /// (if_tsresol byte, ticks, microseconds or nil when out of range)
    static let resolutionCases: [(UInt8, UInt64, Int64?)] = [
        (6, UInt64(Int64.max), .max),
        (6, UInt64(Int64.max) + 1, nil),
        (6, .max, nil),
        (0, 9_223_372_036_854, 9_223_372_036_854_000_000),
        (0, 9_223_372_036_855, nil),
        (3, .max, nil),
        (9, .max, 18_446_744_073_709_551),
        (19, .max, 1_844_674), // 10^-19 s
        (44, .max, 0),
        (45, .max, 0),
        (0x7F, .max, 0), // 10^-127 s
        (0x80, 9_223_372_036_854, 9_223_372_036_854_000_000), // 2^0 s
        (0x80, .max, nil),
        (0x80 | 20, 3 << 19, 1_500_000),
        (0x80 | 63, .max, 1_999_999), // 2^-63 s
        (0x80 | 63, 1 << 63, 1_000_000),
        (0x80 | 64, .max, 999_999),
        (0x80 | 0x7F, .max, 0), // 2^-127 s
    ]

    @Test(arguments: [false, true])
    func pcapngResolutionExtremesConvertExactlyOrFailWithTheirPlace(bigEndian: Bool) throws {
        for (resolution, ticks, expected) in Self.resolutionCases {
            var builder = PcapngBuilder(bigEndian: bigEndian)
            builder.interface(linkType: 187, tsresol: resolution)
            let blockOffset = builder.bytes.count
            builder.enhancedPacket(timestamp: ticks, packet: HCIEventEncoder.h4(Self.event))
            let (times, error) = Self.readAll(builder.bytes)
            if let expected {
                #expect(error == nil && times == [expected], "tsresol \(resolution), ticks \(ticks)")
            } else {
                let failure = try #require(error, "tsresol \(resolution), ticks \(ticks)")
                #expect(failure.recordIndex == 2 && failure.offset == Int64(blockOffset))
                #expect(failure.reason.hasPrefix("timestamp out of range: \(ticks) units of"))
            }
        }
    }

    @Test func pcapngWriterRoundTripsThroughTheReader() throws {
        var bytes = PcapngWriter.sectionHeader()
        bytes += PcapngWriter.interfaceDescription(linkType: 187)
        bytes += PcapngWriter.interfaceDescription(linkType: 187, tsresol: 9)
        bytes += PcapngWriter.enhancedPacket(ticks: UInt64(Int64.max), packet: HCIEventEncoder.h4(Self.event))
        bytes += PcapngWriter.enhancedPacket(interface: 1, ticks: 1_500, packet: HCIEventEncoder.h4(Self.event))
        let (reports, _) = try extractReports(bytes)
        #expect(reports.map(\.timestamp) == [.max, 1])
    }

    /// Any resolution and tick count: a time that never decreases as ticks grow, or the typed error.
    @Test func pcapngConversionIsMonotonicForRandomResolutionsAndTicks() throws {
        var random = ExtremesRandom(seed: 0x5EED)
        for _ in 0..<2_000 {
            let resolution = UInt8(truncatingIfNeeded: random.next())
            let first = random.extreme()
            let second = random.extreme()
            var builder = PcapngBuilder()
            builder.interface(linkType: 187, tsresol: resolution)
            for ticks in [min(first, second), max(first, second)] {
                builder.enhancedPacket(timestamp: ticks, packet: HCIEventEncoder.h4(Self.event))
            }
            let (times, error) = Self.readAll(builder.bytes)
            #expect(times.allSatisfy { $0 >= 0 })
            if times.count == 2 { #expect(times[0] <= times[1]) }
            if let error {
                guard case .timestampOutOfRange = error.kind else {
                    Issue.record("tsresol \(resolution): \(error)")
                    continue
                }
            }
        }
    }

    // MARK: Fuzz-like mutations of every format and link type

    static func sample(_ format: String) -> [UInt8] {
        let h4 = HCIEventEncoder.h4(event)
        switch format {
        case "btsnoop1001", "btsnoop1002", "btsnoop2001":
            let datalink = UInt32(format.dropFirst(7)) ?? 1002
            var bytes = BTSnoopWriter.fileHeader(datalink: datalink)
            for stamp in [Int64.min, 0, BTSnoopWriter.latestTimestamp] {
                BTSnoopWriter.appendRecord(
                    to: &bytes, timestamp: stamp, flags: 3,
                    packet: datalink == 1002 ? h4 : event)
            }
            return bytes
        case "pcapng":
            var bytes = PcapngWriter.sectionHeader()
            bytes += PcapngWriter.interfaceDescription(linkType: 187, tsresol: 0x80 | 63)
            for link: UInt16 in [201, 254, 256, 272] {
                bytes += PcapngWriter.interfaceDescription(linkType: link, tsresol: 19)
            }
            for interface: UInt32 in 0...4 {
                bytes += PcapngWriter.enhancedPacket(interface: interface, ticks: .max, packet: [0, 0, 0, 0] + h4)
            }
            return bytes
        default: // "pcap<linktype>"
            let link = UInt32(format.dropFirst(4)) ?? 187
            var bytes = PcapWriter.fileHeader(linkType: link, nanoseconds: link % 2 == 0, bigEndian: link > 250)
            for stamp in [0, Int64(UInt32.max) * 1_000_000 + 999_999] {
                let packet = link == 187 ? h4 : [0, 0, 0, 3] + event
                PcapWriter.appendRecord(
                    to: &bytes, timestamp: stamp, packet: packet, nanoseconds: link % 2 == 0,
                    bigEndian: link > 250)
            }
            return bytes
        }
    }

    @Test(arguments: [
        "btsnoop1001", "btsnoop1002", "btsnoop2001", "pcap187", "pcap201", "pcap254", "pcap256",
        "pcap272", "pcapng",
    ])
    func mutatedCapturesNeverTrap(format: String) throws {
        let original = Self.sample(format)
        #expect(Self.readAll(original).error == nil)
        var random = ExtremesRandom(seed: UInt64(format.utf8.reduce(0) { $0 &* 31 &+ Int($1) }.magnitude))
        let extremes: [UInt8] = [0x00, 0xFF, 0x80, 0x7F, 0x01]
        for _ in 0..<1_500 {
            var bytes = original
            for _ in 0..<(1 + random.below(4)) {
                let at = random.below(bytes.count)
                let extreme = extremes[random.below(extremes.count)]
                bytes[at] = random.below(2) == 0 ? extreme : UInt8(truncatingIfNeeded: random.next())
            }
            if random.below(8) == 0 { bytes.removeLast(random.below(bytes.count)) }
            let (_, error) = Self.readAll(bytes)
            if let error {
                #expect(error.recordIndex >= -1)
                #expect(error.offset >= 0 && error.offset <= Int64(bytes.count))
                #expect(!error.description.isEmpty)
            }
        }
    }
}

/// Draws from the shared SplitMix64 generator, so a failing case reproduces.
struct ExtremesRandom {
    var generator: SplitMix64

    init(seed: UInt64) { generator = SplitMix64(seed: seed) }

    mutating func next() -> UInt64 { generator.next() }

    mutating func below(_ bound: Int) -> Int {
        bound <= 0 ? 0 : Int(next() % UInt64(bound))
    }

    /// A tick count near an edge half the time: 0, 2^63 ± 1, 2^64 - 1, powers of two and ten.
    mutating func extreme() -> UInt64 {
        switch below(6) {
        case 0: [0, 1, UInt64(Int64.max), UInt64(Int64.max) + 1, .max][below(5)]
        case 1: 1 << UInt64(below(64))
        case 2: (1 << UInt64(below(64))) &- 1
        default: next() >> UInt64(below(64))
        }
    }
}
