/// Builds HCI LE Meta advertising events: the encoder that mirrors
/// `HCIEventDecoder`, used for fixtures, example captures and round-trip tests.
public enum HCIEventEncoder {
    /// Why reports cannot be put into one event.
    public enum EncodingError: Error, Hashable, Sendable {
        case reportCount(Int)
        case dataTooLong(Int)
        case eventTooLong(Int)
    }

    /// An LE Advertising Report event (subevent 0x02). Legacy data is at most 31 bytes.
    public static func advertisingReport(_ reports: [OwnedAdvertisingReport]) throws(EncodingError) -> [UInt8] {
        guard (1...25).contains(reports.count) else { throw .reportCount(reports.count) }
        var body: [UInt8] = [LESubevent.advertisingReport, UInt8(reports.count)]
        for report in reports {
            guard report.data.count <= 31 else { throw .dataTooLong(report.data.count) }
            body.append(report.kind.legacyEventType ?? 0)
            body.append(report.addressType.hciValue)
            body += report.address.littleEndianBytes
            body.append(UInt8(report.data.count))
            body += report.data
            body.append(UInt8(bitPattern: report.rssi ?? 127))
        }
        return try leMeta(body)
    }

    /// An LE Extended Advertising Report event (subevent 0x0D). Each report's data
    /// is at most 229 bytes; split longer data with `extendedFragments`.
    public static func extendedAdvertisingReport(_ reports: [OwnedAdvertisingReport]) throws(EncodingError) -> [UInt8] {
        guard (1...25).contains(reports.count) else { throw .reportCount(reports.count) }
        var body: [UInt8] = [LESubevent.extendedAdvertisingReport, UInt8(reports.count)]
        for report in reports {
            guard report.data.count <= 229 else { throw .dataTooLong(report.data.count) }
            let properties = report.properties.rawValue
            body += [UInt8(truncatingIfNeeded: properties), UInt8(truncatingIfNeeded: properties >> 8)]
            body.append(report.addressType.hciValue)
            body += report.address.littleEndianBytes
            body += [0x01, 0x00] // primary PHY LE 1M, no secondary PHY
            body.append(report.sid ?? 0xFF)
            body.append(UInt8(bitPattern: report.txPower ?? 127))
            body.append(UInt8(bitPattern: report.rssi ?? 127))
            body += [0x00, 0x00] // no periodic advertising
            if let direct = report.directAddress {
                body.append(0x01)
                body += direct.littleEndianBytes
            } else {
                // A directed report without a direct address says so with type 0xFF, which the
                // decoder reads as "none"; any other type would decode as address 00:00:00:00:00:00.
                body.append(report.properties.contains(.directed) ? 0xFF : 0x00)
                body += [UInt8](repeating: 0, count: 6)
            }
            body.append(UInt8(report.data.count))
            body += report.data
        }
        return try leMeta(body)
    }

    /// An LE Directed Advertising Report event (subevent 0x0B).
    public static func directedAdvertisingReport(_ reports: [OwnedAdvertisingReport]) throws(EncodingError) -> [UInt8] {
        guard (1...25).contains(reports.count) else { throw .reportCount(reports.count) }
        var body: [UInt8] = [LESubevent.directedAdvertisingReport, UInt8(reports.count)]
        for report in reports {
            body.append(report.kind.legacyEventType ?? 0x01)
            body.append(report.addressType.hciValue)
            body += report.address.littleEndianBytes
            body.append(0x01) // direct address type: random
            body += (report.directAddress ?? BluetoothAddress(rawValue: 0)).littleEndianBytes
            body.append(UInt8(bitPattern: report.rssi ?? 127))
        }
        return try leMeta(body)
    }

    /// Splits `report` into extended reports of at most `chunk` data bytes each:
    /// every one but the last says "incomplete, more data to come".
    public static func extendedFragments(of report: OwnedAdvertisingReport, chunk: Int = 229)
        -> [OwnedAdvertisingReport]
    {
        let size = max(1, min(chunk, 229))
        var fragments: [OwnedAdvertisingReport] = []
        var start = 0
        repeat {
            let end = min(report.data.count, start + size)
            var fragment = report
            fragment.data = Array(report.data[start..<end])
            let more = end < report.data.count
            let status: UInt16 = more ? 1 : (report.isTruncated ? 2 : 0)
            fragment.properties = ExtendedEventProperties(rawValue: report.properties.rawValue & ~0x60 | status << 5)
            fragments.append(fragment)
            start = end
        } while start < report.data.count
        return fragments
    }

    /// Wraps LE Meta parameters into an event: `[0x3E][length][parameters]`.
    static func leMeta(_ parameters: [UInt8]) throws(EncodingError) -> [UInt8] {
        guard parameters.count <= 255 else { throw .eventTooLong(parameters.count) }
        return [HCIEventCode.leMeta, UInt8(parameters.count)] + parameters
    }

    /// The H4 framing of an event: a 0x04 type byte in front.
    public static func h4(_ event: [UInt8]) -> [UInt8] { [0x04] + event }
}
