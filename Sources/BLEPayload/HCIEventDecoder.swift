/// HCI event codes and LE Meta subevents the decoder knows about.
public enum HCIEventCode {
    public static let commandComplete: UInt8 = 0x0E
    public static let commandStatus: UInt8 = 0x0F
    public static let leMeta: UInt8 = 0x3E
}

public enum LESubevent {
    public static let advertisingReport: UInt8 = 0x02
    public static let directedAdvertisingReport: UInt8 = 0x0B
    public static let extendedAdvertisingReport: UInt8 = 0x0D
}

/// Why an HCI event could not be decoded, and where.
public struct HCIEventError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Reason: Hashable, Sendable {
        case truncated(needed: Int, available: Int)
        case lengthMismatch(declared: Int, actual: Int)
        case badReportCount(Int)
        case dataTooLong(Int)
        case reservedEventType(UInt8)
    }

    /// Offset within the event (event code at 0).
    public var offset: Int
    public var reason: Reason

    public var description: String {
        switch reason {
        case .truncated(let needed, let available):
            "truncated at byte \(offset): needs \(needed) bytes, \(available) left"
        case .lengthMismatch(let declared, let actual):
            "parameter length \(declared) does not match the \(actual) bytes present"
        case .badReportCount(let count):
            "Num_Reports \(count) at byte \(offset) is outside 1–25"
        case .dataTooLong(let length):
            "Data_Length \(length) at byte \(offset) exceeds 31"
        case .reservedEventType(let type):
            "reserved Event_Type 0x\(String(type, radix: 16)) at byte \(offset)"
        }
    }

    init(_ truncated: TruncatedRead) {
        offset = truncated.offset
        reason = .truncated(needed: truncated.needed, available: truncated.available)
    }

    public init(offset: Int, reason: Reason) {
        self.offset = offset
        self.reason = reason
    }
}

/// Counters kept by the decoder. Every event lands in exactly one of
/// `advertisingEvents`, `skippedEvents` or `malformedEvents`.
public struct HCIDecodeCounters: Hashable, Sendable {
    public var events = 0
    public var advertisingEvents = 0
    public var skippedEvents = 0
    public var malformedEvents = 0
    public var reports = 0
    /// Extended fragments held for reassembly ("more data to come").
    public var fragmentsHeld = 0
    /// Reports delivered after joining fragments.
    public var reportsReassembled = 0
    /// Pending fragment chains dropped: evicted for room, or overflowing 1650 bytes.
    public var fragmentChainsDropped = 0
    public var truncatedReports = 0

    public init() {}
}

/// Decodes HCI LE Meta advertising events into `AdvertisingReport`s.
///
/// Decoding does not allocate per report: reports borrow the event's bytes, and
/// extended-advertising fragments are joined in buffers allocated once.
public struct HCIEventDecoder {
    private var eventCounters = HCIDecodeCounters()
    /// A copy of `routineTable`, so dispatch does not go through a lazy global each event.
    private let routines = HCIEventDecoder.routineTable
    /// Shared between copies of the decoder until one of them holds or completes a fragment
    /// (copy on write), so a copy never sees another's chains.
    private(set) var reassembler: ExtendedAdvertisingReassembler

    public var counters: HCIDecodeCounters {
        var combined = eventCounters
        combined.fragmentsHeld = reassembler.fragmentsHeld
        combined.reportsReassembled = reassembler.reportsReassembled
        combined.fragmentChainsDropped = reassembler.chainsDropped
        return combined
    }

    /// - Parameter maxPendingChains: how many (address, SID) fragment chains may be
    ///   pending at once; the least recently extended one is dropped for a new one.
    public init(maxPendingChains: Int = 16) {
        reassembler = ExtendedAdvertisingReassembler(slots: maxPendingChains)
    }

    /// What one event turned out to be.
    public enum Outcome: Hashable, Sendable {
        case advertising(reports: Int)
        case skipped(eventCode: UInt8, subevent: UInt8?)
        case malformed(HCIEventError)
    }

    /// How the decoder handles each LE Meta subevent, in the style of BlueZ's
    /// `monitor/packet.c` tables: the code, a name, and the decoding routine.
    struct SubeventDescriptor {
        enum Routine { case legacy, directed, extended }
        let code: UInt8
        let name: String
        let routine: Routine
    }

    static let subevents: [SubeventDescriptor] = [
        SubeventDescriptor(code: LESubevent.advertisingReport, name: "LE Advertising Report", routine: .legacy),
        SubeventDescriptor(
            code: LESubevent.directedAdvertisingReport, name: "LE Directed Advertising Report", routine: .directed),
        SubeventDescriptor(
            code: LESubevent.extendedAdvertisingReport, name: "LE Extended Advertising Report", routine: .extended),
    ]

    /// Subevent code to routine, for constant-time dispatch.
    static let routineTable: [SubeventDescriptor.Routine?] = {
        var table = [SubeventDescriptor.Routine?](repeating: nil, count: 256)
        for descriptor in subevents { table[Int(descriptor.code)] = descriptor.routine }
        return table
    }()

    /// The name of an LE Meta subevent this decoder handles.
    public static func subeventName(_ code: UInt8) -> String? {
        subevents.first { $0.code == code }?.name
    }

    /// Decodes one HCI event (starting at its event code, without an H4 type byte)
    /// and calls `body` for each advertising report in it. Reports decoded before a
    /// malformed part of the event are still delivered.
    public mutating func decode(
        event: UnsafeRawBufferPointer, timestamp: Int64, controller: UInt16? = nil,
        _ body: (AdvertisingReport) -> Void
    ) -> Outcome {
        eventCounters.events += 1
        guard event.count >= 2 else {
            return malformed(HCIEventError(offset: 0, reason: .truncated(needed: 2, available: event.count)))
        }
        let code = event[0]
        let declared = Int(event[1])
        guard declared == event.count - 2 else {
            return malformed(
                HCIEventError(offset: 1, reason: .lengthMismatch(declared: declared, actual: event.count - 2)))
        }
        guard code == HCIEventCode.leMeta, event.count >= 3 else {
            eventCounters.skippedEvents += 1
            return .skipped(eventCode: code, subevent: nil)
        }
        let subevent = event[2]
        guard let routine = routines[Int(subevent)] else {
            eventCounters.skippedEvents += 1
            return .skipped(eventCode: code, subevent: subevent)
        }
        var reader = ByteReader(event, offset: 3)
        var delivered = 0
        let context = ReportContext(timestamp: timestamp, controller: controller)
        do throws(HCIEventError) {
            switch routine {
            case .legacy: try decodeLegacy(&reader, context, &delivered, body)
            case .directed: try decodeDirected(&reader, context, &delivered, body)
            case .extended: try decodeExtended(&reader, context, &delivered, body)
            }
            eventCounters.reports += delivered
            eventCounters.advertisingEvents += 1
            return .advertising(reports: delivered)
        } catch {
            eventCounters.reports += delivered
            return malformed(error)
        }
    }

    private mutating func malformed(_ error: HCIEventError) -> Outcome {
        eventCounters.malformedEvents += 1
        return .malformed(error)
    }

    struct ReportContext {
        let timestamp: Int64
        let controller: UInt16?
    }

    private static func reportCount(_ reader: inout ByteReader) throws(HCIEventError) -> Int {
        let offset = reader.offset
        let count: Int
        do { count = Int(try reader.u8()) } catch { throw HCIEventError(error) }
        guard (1...25).contains(count) else {
            throw HCIEventError(offset: offset, reason: .badReportCount(count))
        }
        return count
    }

    @inline(__always)
    private static func rssi(_ raw: Int8) -> Int8? { raw == 127 ? nil : raw }

    private func decodeLegacy(
        _ reader: inout ByteReader, _ context: ReportContext, _ delivered: inout Int,
        _ body: (AdvertisingReport) -> Void
    ) throws(HCIEventError) {
        let count = try Self.reportCount(&reader)
        for _ in 0..<count {
            let eventType: UInt8
            let addressType: UInt8
            let address: BluetoothAddress
            let length: Int
            let lengthOffset: Int
            let typeOffset = reader.offset
            do throws(TruncatedRead) {
                eventType = try reader.u8()
                addressType = try reader.u8()
                address = try reader.address()
                lengthOffset = reader.offset
                length = Int(try reader.u8())
            } catch {
                throw HCIEventError(error)
            }
            guard length <= 31 else { throw HCIEventError(offset: lengthOffset, reason: .dataTooLong(length)) }
            let data: UnsafeRawBufferPointer
            let rssi: Int8
            do throws(TruncatedRead) {
                data = try reader.slice(length)
                rssi = try reader.i8()
            } catch {
                throw HCIEventError(error)
            }
            guard let kind = AdvertisingPDUKind(legacyEventType: eventType) else {
                throw HCIEventError(offset: typeOffset, reason: .reservedEventType(eventType))
            }
            body(
                AdvertisingReport(
                    timestamp: context.timestamp, controller: context.controller, origin: .legacyReport, kind: kind,
                    properties: ExtendedEventProperties(legacy: kind), addressType: AddressType(hciValue: addressType),
                    address: address, rssi: Self.rssi(rssi), data: AdvertisingData(data)))
            delivered += 1
        }
    }

    private func decodeDirected(
        _ reader: inout ByteReader, _ context: ReportContext, _ delivered: inout Int,
        _ body: (AdvertisingReport) -> Void
    ) throws(HCIEventError) {
        let count = try Self.reportCount(&reader)
        do throws(TruncatedRead) {
            for _ in 0..<count {
                let eventType = try reader.u8()
                let addressType = try reader.u8()
                let address = try reader.address()
                _ = try reader.u8() // direct address type
                let directAddress = try reader.address()
                let rssi = try reader.i8()
                let kind = AdvertisingPDUKind(legacyEventType: eventType) ?? .advDirectInd
                body(
                    AdvertisingReport(
                        timestamp: context.timestamp, controller: context.controller, origin: .directedReport,
                        kind: kind,
                        properties: ExtendedEventProperties(legacy: kind),
                        addressType: AddressType(hciValue: addressType),
                        address: address, directAddress: directAddress, rssi: Self.rssi(rssi),
                        data: AdvertisingData(UnsafeRawBufferPointer(start: nil, count: 0))))
                delivered += 1
            }
        } catch {
            throw HCIEventError(error)
        }
    }

    private mutating func decodeExtended(
        _ reader: inout ByteReader, _ context: ReportContext, _ delivered: inout Int,
        _ body: (AdvertisingReport) -> Void
    ) throws(HCIEventError) {
        let count = try Self.reportCount(&reader)
        if !isKnownUniquelyReferenced(&reassembler) { reassembler = reassembler.copy() }
        do throws(TruncatedRead) {
            for _ in 0..<count {
                let properties = ExtendedEventProperties(rawValue: try reader.u16le())
                let addressTypeRaw = try reader.u8()
                let address = try reader.address()
                try reader.skip(2) // primary and secondary PHY
                let sid = try reader.u8()
                let txPower = try reader.i8()
                let rssi = try reader.i8()
                try reader.skip(2) // periodic advertising interval
                let directAddressType = try reader.u8()
                let directAddress = try reader.address()
                let length = Int(try reader.u8())
                let data = try reader.slice(length)

                let kind = properties.legacyKind ?? .extended
                var report = AdvertisingReport(
                    timestamp: context.timestamp, controller: context.controller, origin: .extendedReport, kind: kind,
                    properties: properties, addressType: AddressType(hciValue: addressTypeRaw), address: address,
                    directAddress: properties.contains(.directed) && directAddressType != 0xFF ? directAddress : nil,
                    rssi: Self.rssi(rssi), txPower: Self.rssi(txPower), sid: sid == 0xFF ? nil : sid,
                    data: AdvertisingData(data))
                let key = ExtendedAdvertisingReassembler.Key(
                    address: address.rawValue, addressType: addressTypeRaw, sid: sid)
                switch properties.dataStatus {
                case 1:
                    if reassembler.hold(key, data) == false {
                        report.isTruncated = true
                        eventCounters.truncatedReports += 1
                        body(report)
                        delivered += 1
                    }
                default:
                    report.isTruncated = properties.dataStatus != 0
                    if report.isTruncated { eventCounters.truncatedReports += 1 }
                    if reassembler.hasPending(key) {
                        reassembler.complete(key, data) { joined, overflowed in
                            report.data = AdvertisingData(joined)
                            if overflowed && !report.isTruncated {
                                report.isTruncated = true
                                eventCounters.truncatedReports += 1
                            }
                            body(report)
                        }
                    } else {
                        body(report)
                    }
                    delivered += 1
                }
            }
        } catch {
            throw HCIEventError(error)
        }
    }
}
