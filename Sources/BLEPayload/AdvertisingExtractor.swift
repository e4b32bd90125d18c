/// Counters over the records an `AdvertisingExtractor` has seen.
public struct ExtractorCounters: Hashable, Sendable {
    public var records = 0
    /// HCI events from the controller (any event code).
    public var hciEvents = 0
    /// Records that are not controller events: commands, ACL, SCO, ISO, btmon notes, index records.
    public var otherRecords = 0
    /// Link-layer packets from a radio sniffer.
    public var linkLayerPackets = 0
    /// Sniffer packets dropped because their CRC failed.
    public var linkLayerBadCRC = 0
    /// Sniffer packets that carried no advertising report.
    public var linkLayerSkipped = 0
    /// Records too short for their own framing (H4 type, direction, monitor or sniffer header).
    public var malformedRecords = 0
    public var reports = 0

    public init() {}
}

/// A problem with one record that did not stop the capture: the record is
/// skipped and counted, and the caller may report where it was.
public struct RecordProblem: Hashable, Sendable, CustomStringConvertible {
    /// Offset of the problem within the record's packet bytes.
    public var offset: Int
    public var what: String

    public var description: String { "\(what) (packet byte \(offset))" }
}

/// Turns capture records of any supported link type into advertising reports:
/// HCI events go through `HCIEventDecoder`, sniffer packets through `LinkLayerAdvertising`.
public struct AdvertisingExtractor {
    public var hci: HCIEventDecoder
    public private(set) var counters = ExtractorCounters()

    /// Deliver sniffed PDUs whose CRC failed, marked `crcFailed`, instead of dropping them.
    /// For diagnostics and conformance checks only: their content cannot be trusted.
    public var deliversBadCRC = false

    public init(maxPendingChains: Int = 16, deliversBadCRC: Bool = false) {
        hci = HCIEventDecoder(maxPendingChains: maxPendingChains)
        self.deliversBadCRC = deliversBadCRC
    }

    /// Processes one record and calls `body` for each report it holds. Returns a
    /// description of what was wrong with the record, if anything.
    @discardableResult
    public mutating func process(_ packet: CapturePacket, _ body: (AdvertisingReport) -> Void) -> RecordProblem? {
        counters.records += 1
        let bytes = packet.bytes
        switch packet.linkType {
        case .h4:
            return h4(bytes, headerLength: 0, timestamp: packet.timestamp, controller: nil, body)
        case .h4WithDirection:
            return h4(bytes, headerLength: 4, timestamp: packet.timestamp, controller: nil, body)
        case .hciUnencapsulated:
            // btsnoop flags: bit 0 received, bit 1 command/event. Events are both.
            guard packet.flags & 0x3 == 0x3 else {
                counters.otherRecords += 1
                return nil
            }
            return event(bytes, timestamp: packet.timestamp, controller: nil, body)
        case .btmon:
            let opcode = UInt16(truncatingIfNeeded: packet.flags)
            let index = UInt16(truncatingIfNeeded: packet.flags >> 16)
            return monitor(opcode: opcode, index: index, bytes, timestamp: packet.timestamp, body)
        case .linuxMonitor:
            guard bytes.count >= 4 else { return malformedRecord(0, "Linux monitor header shorter than 4 bytes") }
            let index = UInt16(bytes[0]) << 8 | UInt16(bytes[1])
            let opcode = UInt16(bytes[2]) << 8 | UInt16(bytes[3])
            return monitor(
                opcode: opcode, index: index, UnsafeRawBufferPointer(rebasing: bytes[4...]),
                timestamp: packet.timestamp, body)
        case .leLinkLayerWithPseudoHeader:
            return leLinkLayer(bytes, timestamp: packet.timestamp, body)
        case .nordicBLE:
            return nordic(bytes, timestamp: packet.timestamp, body)
        }
    }

    private mutating func malformedRecord(_ offset: Int, _ what: String) -> RecordProblem {
        counters.malformedRecords += 1
        return RecordProblem(offset: offset, what: what)
    }

    private mutating func h4(
        _ bytes: UnsafeRawBufferPointer, headerLength: Int, timestamp: Int64, controller: UInt16?,
        _ body: (AdvertisingReport) -> Void
    ) -> RecordProblem? {
        guard bytes.count > headerLength else {
            return malformedRecord(0, "record shorter than its \(headerLength + 1)-byte H4 header")
        }
        guard bytes[headerLength] == 0x04 else {
            counters.otherRecords += 1
            return nil
        }
        return event(
            UnsafeRawBufferPointer(rebasing: bytes[(headerLength + 1)...]), timestamp: timestamp,
            controller: controller, body, baseOffset: headerLength + 1)
    }

    private mutating func monitor(
        opcode: UInt16, index: UInt16, _ bytes: UnsafeRawBufferPointer, timestamp: Int64,
        _ body: (AdvertisingReport) -> Void
    ) -> RecordProblem? {
        // btmon opcode 3 is "event packet"; the rest are commands, data, index and log records.
        guard opcode == 3 else {
            counters.otherRecords += 1
            return nil
        }
        return event(bytes, timestamp: timestamp, controller: index, body)
    }

    private mutating func event(
        _ bytes: UnsafeRawBufferPointer, timestamp: Int64, controller: UInt16?, _ body: (AdvertisingReport) -> Void,
        baseOffset: Int = 0
    ) -> RecordProblem? {
        counters.hciEvents += 1
        var delivered = 0
        let outcome = hci.decode(event: bytes, timestamp: timestamp, controller: controller) { report in
            delivered += 1
            body(report)
        }
        counters.reports += delivered
        if case .malformed(let error) = outcome {
            let name =
                bytes.count >= 3 && bytes[0] == HCIEventCode.leMeta
                ? HCIEventDecoder.subeventName(bytes[2]) ?? "HCI event" : "HCI event"
            return RecordProblem(offset: baseOffset + error.offset, what: "malformed \(name): \(error)")
        }
        return nil
    }

    /// LINKTYPE_BLUETOOTH_LE_LL_WITH_PHDR: rf_channel, signal power (dBm), noise power,
    /// access-address offenses, reference access address (u32), flags (u16 LE), then the packet.
    private mutating func leLinkLayer(
        _ bytes: UnsafeRawBufferPointer, timestamp: Int64, _ body: (AdvertisingReport) -> Void
    ) -> RecordProblem? {
        guard bytes.count >= 10 else { return malformedRecord(0, "LE link-layer pseudo-header shorter than 10 bytes") }
        counters.linkLayerPackets += 1
        let flags = UInt16(bytes[8]) | UInt16(bytes[9]) << 8
        let packet = UnsafeRawBufferPointer(rebasing: bytes[10...])
        let crcChecked = flags & 0x0400 != 0
        let crcValid = flags & 0x0800 != 0
        // When the sniffer did not check the CRC, check it here, as Wireshark does on the
        // advertising channels (whose CRC initial value is known).
        let crcBad = crcChecked ? !crcValid : LinkLayerAdvertising.crcMatches(packet: packet) == false
        if crcBad {
            counters.linkLayerBadCRC += 1
            guard deliversBadCRC else { return nil }
        }
        let rssi: Int8? = flags & 0x0002 != 0 ? Int8(bitPattern: bytes[1]) : nil
        return linkLayerPDU(packet, rssi: rssi, timestamp: timestamp, baseOffset: 10, crcFailed: crcBad, body)
    }

    /// LINKTYPE_NORDIC_BLE, protocol versions 2 and 3: board id, payload length (u16 LE),
    /// protocol version, packet counter (u16), packet id; then header length, flags
    /// (bit 0: CRC OK), channel, RSSI (negated), event counter (u16), timestamp (u32); then the packet.
    private mutating func nordic(
        _ bytes: UnsafeRawBufferPointer, timestamp: Int64, _ body: (AdvertisingReport) -> Void
    ) -> RecordProblem? {
        guard bytes.count >= 7 else { return malformedRecord(0, "nRF Sniffer header shorter than 7 bytes") }
        let version = bytes[3]
        guard version >= 2 else {
            return malformedRecord(3, "nRF Sniffer protocol version \(version) is not supported")
        }
        let packetID = bytes[6]
        // 0x02: advertising or data packet (v2 "event packet"; v3 advertising PDU); 0x06: v3 data PDU.
        guard packetID == 0x02 || packetID == 0x06 else {
            counters.otherRecords += 1
            return nil
        }
        guard bytes.count >= 8 else { return malformedRecord(7, "nRF Sniffer packet header missing") }
        let headerLength = Int(bytes[7])
        guard headerLength >= 10, bytes.count >= 7 + headerLength else {
            return malformedRecord(7, "nRF Sniffer packet header length \(headerLength) overruns the record")
        }
        counters.linkLayerPackets += 1
        let flags = bytes[8]
        let crcBad = flags & 0x01 == 0
        if crcBad {
            counters.linkLayerBadCRC += 1
            guard deliversBadCRC else { return nil }
        }
        let rssi = Int8(truncatingIfNeeded: -Int(bytes[10]))
        return linkLayerPDU(
            UnsafeRawBufferPointer(rebasing: bytes[(7 + headerLength)...]), rssi: rssi,
            timestamp: timestamp, baseOffset: 7 + headerLength, crcFailed: crcBad, body)
    }

    private mutating func linkLayerPDU(
        _ packet: UnsafeRawBufferPointer, rssi: Int8?, timestamp: Int64, baseOffset: Int, crcFailed: Bool,
        _ body: (AdvertisingReport) -> Void
    ) -> RecordProblem? {
        var delivered = 0
        let skip = LinkLayerAdvertising.decode(packet: packet, rssi: rssi, timestamp: timestamp) { report in
            delivered += 1
            var report = report
            report.crcFailed = crcFailed
            body(report)
        }
        counters.reports += delivered
        switch skip {
        case nil:
            return nil
        case .malformed(let offset):
            counters.linkLayerSkipped += 1
            return RecordProblem(offset: baseOffset + offset, what: "malformed link-layer advertising PDU")
        case .notAdvertisingChannel, .notAReportPDU:
            counters.linkLayerSkipped += 1
            return nil
        }
    }
}
