/// The advertising PDU a report came from.
public enum AdvertisingPDUKind: UInt8, Hashable, Sendable, CaseIterable {
    case advInd
    case advDirectInd
    case advScanInd
    case advNonconnInd
    case scanRsp
    /// An extended (non-legacy) advertising PDU; see the event properties.
    case extended

    /// The legacy report event type (0x00–0x04) for this kind.
    public var legacyEventType: UInt8? {
        switch self {
        case .advInd: 0x00
        case .advDirectInd: 0x01
        case .advScanInd: 0x02
        case .advNonconnInd: 0x03
        case .scanRsp: 0x04
        case .extended: nil
        }
    }

    public init?(legacyEventType: UInt8) {
        switch legacyEventType {
        case 0x00: self = .advInd
        case 0x01: self = .advDirectInd
        case 0x02: self = .advScanInd
        case 0x03: self = .advNonconnInd
        case 0x04: self = .scanRsp
        default: return nil
        }
    }

    /// The name used in replay JSON.
    public var name: String {
        switch self {
        case .advInd: "adv_ind"
        case .advDirectInd: "adv_direct_ind"
        case .advScanInd: "adv_scan_ind"
        case .advNonconnInd: "adv_nonconn_ind"
        case .scanRsp: "scan_rsp"
        case .extended: "ext_adv"
        }
    }
}

/// Extended advertising report event-type bits (Core spec Vol 4 Part E 7.7.65.13).
public struct ExtendedEventProperties: OptionSet, Hashable, Sendable {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let connectable = ExtendedEventProperties(rawValue: 1 << 0)
    public static let scannable = ExtendedEventProperties(rawValue: 1 << 1)
    public static let directed = ExtendedEventProperties(rawValue: 1 << 2)
    public static let scanResponse = ExtendedEventProperties(rawValue: 1 << 3)
    public static let legacy = ExtendedEventProperties(rawValue: 1 << 4)

    /// Bits 5–6: 0 complete, 1 incomplete with more to come, 2 incomplete and truncated.
    public var dataStatus: UInt8 { UInt8((rawValue >> 5) & 0x3) }

    /// The legacy PDU these properties describe, for reports with the legacy bit set.
    public var legacyKind: AdvertisingPDUKind? {
        guard contains(.legacy) else { return nil }
        switch rawValue & 0x0F {
        case 0x03: return .advInd
        case 0x05, 0x0D: return .advDirectInd
        case 0x02: return .advScanInd
        case 0x00: return .advNonconnInd
        case 0x0B, 0x0A: return .scanRsp
        default: return nil
        }
    }

    /// The properties an extended report uses for a legacy PDU.
    public init(legacy kind: AdvertisingPDUKind) {
        switch kind {
        case .advInd: rawValue = 0x13
        case .advDirectInd: rawValue = 0x15
        case .advScanInd: rawValue = 0x12
        case .advNonconnInd: rawValue = 0x10
        case .scanRsp: rawValue = 0x1B
        case .extended: rawValue = 0x00
        }
    }
}

/// Which HCI event or capture layer delivered a report.
public enum ReportOrigin: Hashable, Sendable {
    case legacyReport
    case extendedReport
    case directedReport
    case linkLayer
    /// BlueZ's D-Bus device properties (the `bluez` backend): the AD structures are rebuilt
    /// from them, and the PDU kind is not known.
    case bluezDevice
}

/// One advertising report, borrowed from the buffer it was decoded from.
///
/// `data` points into the decoder's input (or its reassembly buffer), so a
/// report is valid only inside the callback that delivers it. Use `owned()` to keep one.
public struct AdvertisingReport {
    /// Reception time, Unix microseconds (capture time in replay).
    public var timestamp: Int64
    /// The controller index, where the capture records one (btmon captures).
    public var controller: UInt16?
    public var origin: ReportOrigin
    public var kind: AdvertisingPDUKind
    public var properties: ExtendedEventProperties
    public var addressType: AddressType
    public var address: BluetoothAddress
    /// The target of a directed advertisement.
    public var directAddress: BluetoothAddress?
    /// dBm; nil when the controller said "not available" (127) or reported none.
    public var rssi: Int8?
    /// The extended report's TX_Power field; nil for legacy reports or 127.
    public var txPower: Int8?
    /// The advertising set id of an extended report (0xFF: none).
    public var sid: UInt8?
    /// An extended report whose data the controller truncated.
    public var isTruncated: Bool
    /// A sniffed link-layer PDU whose CRC failed. Such PDUs are delivered only when
    /// the extractor is asked to (for diagnostics); never in normal operation.
    public var crcFailed = false
    public var data: AdvertisingData

    public init(
        timestamp: Int64 = 0, controller: UInt16? = nil, origin: ReportOrigin, kind: AdvertisingPDUKind,
        properties: ExtendedEventProperties, addressType: AddressType, address: BluetoothAddress,
        directAddress: BluetoothAddress? = nil, rssi: Int8?, txPower: Int8? = nil, sid: UInt8? = nil,
        isTruncated: Bool = false, data: AdvertisingData
    ) {
        self.timestamp = timestamp
        self.controller = controller
        self.origin = origin
        self.kind = kind
        self.properties = properties
        self.addressType = addressType
        self.address = address
        self.directAddress = directAddress
        self.rssi = rssi
        self.txPower = txPower
        self.sid = sid
        self.isTruncated = isTruncated
        self.data = data
    }

    /// A copy that owns its advertising data.
    public func owned() -> OwnedAdvertisingReport {
        OwnedAdvertisingReport(
            timestamp: timestamp, controller: controller, origin: origin, kind: kind, properties: properties,
            addressType: addressType, address: address, directAddress: directAddress, rssi: rssi,
            txPower: txPower, sid: sid, isTruncated: isTruncated, crcFailed: crcFailed, data: Array(data.bytes))
    }
}

/// An advertising report that owns its bytes: for tests, encoders and queues.
public struct OwnedAdvertisingReport: Hashable, Sendable {
    public var timestamp: Int64
    public var controller: UInt16?
    public var origin: ReportOrigin
    public var kind: AdvertisingPDUKind
    public var properties: ExtendedEventProperties
    public var addressType: AddressType
    public var address: BluetoothAddress
    public var directAddress: BluetoothAddress?
    public var rssi: Int8?
    public var txPower: Int8?
    public var sid: UInt8?
    public var isTruncated: Bool
    public var crcFailed: Bool
    public var data: [UInt8]

    public init(
        timestamp: Int64 = 0, controller: UInt16? = nil, origin: ReportOrigin = .legacyReport,
        kind: AdvertisingPDUKind = .advNonconnInd, properties: ExtendedEventProperties? = nil,
        addressType: AddressType = .publicDevice, address: BluetoothAddress, directAddress: BluetoothAddress? = nil,
        rssi: Int8?, txPower: Int8? = nil, sid: UInt8? = nil, isTruncated: Bool = false, crcFailed: Bool = false,
        data: [UInt8]
    ) {
        self.timestamp = timestamp
        self.controller = controller
        self.origin = origin
        self.kind = kind
        self.properties = properties ?? ExtendedEventProperties(legacy: kind)
        self.addressType = addressType
        self.address = address
        self.directAddress = directAddress
        self.rssi = rssi
        self.txPower = txPower
        self.sid = sid
        self.isTruncated = isTruncated
        self.crcFailed = crcFailed
        self.data = data
    }

    /// Borrows this report as an `AdvertisingReport` for the duration of `body`.
    public func withReport<R>(_ body: (AdvertisingReport) throws -> R) rethrows -> R {
        try data.withUnsafeBytes { bytes in
            var report = AdvertisingReport(
                timestamp: timestamp, controller: controller, origin: origin, kind: kind, properties: properties,
                addressType: addressType, address: address, directAddress: directAddress, rssi: rssi,
                txPower: txPower, sid: sid, isTruncated: isTruncated, data: AdvertisingData(bytes))
            report.crcFailed = crcFailed
            return try body(report)
        }
    }
}
