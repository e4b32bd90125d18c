/// Decodes Bluetooth LE link-layer advertising PDUs, as radio sniffers capture
/// them, into advertising reports.
public enum LinkLayerAdvertising {
    /// The access address of the advertising channels.
    public static let advertisingAccessAddress: UInt32 = 0x8E89_BED6

    /// The CRC initial value on the advertising channels.
    public static let advertisingCRCInit: UInt32 = 0x55_5555

    /// The link-layer CRC-24 (polynomial x^24+x^10+x^9+x^6+x^4+x^3+x+1) over `pdu`
    /// (header and payload), in the byte order it is transmitted: compare it with
    /// the three CRC bytes read as a little-endian number.
    public static func crc24(_ pdu: UnsafeRawBufferPointer, initial: UInt32 = advertisingCRCInit) -> UInt32 {
        // The LFSR runs least significant bit first, so it starts from the bit-reversed initial value.
        var state: UInt32 = 0
        for bit in 0..<24 where initial & (1 << UInt32(bit)) != 0 { state |= 1 << UInt32(23 - bit) }
        for byte in pdu {
            var current = byte
            for _ in 0..<8 {
                let feedback = (state ^ UInt32(current)) & 1
                current >>= 1
                state >>= 1
                if feedback != 0 { state = (state | 1 << 23) ^ 0x5A_6000 }
            }
        }
        return state
    }

    /// Whether `packet` (access address, header, payload, CRC) carries a CRC, and if so
    /// whether it matches. Nil when the packet is too short to hold one.
    public static func crcMatches(packet: UnsafeRawBufferPointer) -> Bool? {
        guard packet.count >= 6 else { return nil }
        let length = Int(packet[5])
        guard packet.count >= 6 + length + 3 else { return nil }
        let pdu = UnsafeRawBufferPointer(rebasing: packet[4..<(6 + length)])
        let sent = UInt32(packet[6 + length]) | UInt32(packet[7 + length]) << 8 | UInt32(packet[8 + length]) << 16
        return crc24(pdu) == sent
    }

    /// Why a link-layer packet gave no report.
    public enum Skip: Hashable, Sendable {
        /// Not on the advertising access address: a data-channel packet.
        case notAdvertisingChannel
        /// SCAN_REQ, CONNECT_IND, ADV_EXT_IND and other PDUs that carry no report.
        case notAReportPDU(UInt8)
        case malformed(offset: Int)
    }

    /// Decodes `packet` (access address, 2-byte header, payload, optionally the CRC).
    /// ADV_IND, ADV_DIRECT_IND, ADV_NONCONN_IND, SCAN_RSP and ADV_SCAN_IND become reports.
    public static func decode(
        packet: UnsafeRawBufferPointer, rssi: Int8?, timestamp: Int64, _ body: (AdvertisingReport) -> Void
    ) -> Skip? {
        var reader = ByteReader(packet)
        do throws(TruncatedRead) {
            guard try reader.u32le() == advertisingAccessAddress else { return .notAdvertisingChannel }
            let header = try reader.u8()
            let length = Int(try reader.u8())
            let lengthOffset = reader.offset - 1
            guard length >= 6, length <= reader.remaining else { return .malformed(offset: lengthOffset) }
            let pduType = header & 0x0F
            let kind: AdvertisingPDUKind
            switch pduType {
            case 0x0: kind = .advInd
            case 0x1: kind = .advDirectInd
            case 0x2: kind = .advNonconnInd
            case 0x4: kind = .scanRsp
            case 0x6: kind = .advScanInd
            default: return .notAReportPDU(pduType)
            }
            let address = try reader.address()
            let addressType: AddressType = header & 0x40 != 0 ? .randomDevice : .publicDevice
            var directAddress: BluetoothAddress?
            var data = UnsafeRawBufferPointer(start: nil, count: 0)
            if kind == .advDirectInd {
                guard length >= 12 else { return .malformed(offset: lengthOffset) }
                directAddress = try reader.address()
            } else {
                data = try reader.slice(length - 6)
            }
            body(
                AdvertisingReport(
                    timestamp: timestamp, origin: .linkLayer, kind: kind,
                    properties: ExtendedEventProperties(legacy: kind),
                    addressType: addressType, address: address, directAddress: directAddress, rssi: rssi,
                    data: AdvertisingData(data)))
            return nil
        } catch {
            return .malformed(offset: error.offset)
        }
    }
}
