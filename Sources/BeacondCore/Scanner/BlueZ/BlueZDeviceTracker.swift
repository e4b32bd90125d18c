import BLEPayload
import CBlueZ

/// The `org.bluez.Device1` properties one signal carried.
///
/// Parsed straight from the message: names are compared as C strings and the manufacturer
/// data is rebuilt as AD structures in a buffer that is reused from signal to signal. A property
/// of an unexpected type (BlueZ and its mocks have sent an empty ManufacturerData typed
/// `aa{qv}`) is skipped and counted, never trusted in part.
struct BlueZDeviceProperties {
    /// Manufacturer data longer than this does not fit one AD structure.
    static let maxManufacturerPayload = 255 - 3

    var address: BluetoothAddress?
    var addressType: AddressType?
    /// The signal carried a well-typed ManufacturerData; `manufacturerAD` holds it.
    var hasManufacturerData = false
    /// `[len, 0xFF, company lo, company hi, data...]` per company, in the order BlueZ sent them.
    var manufacturerAD: [UInt8] = []
    var rssi: Int8?
    var txPower: Int8?
    var invalidatesManufacturerData = false
    var invalidatesRSSI = false
    var invalidatesTxPower = false
    /// Properties skipped for their type, and the first of them for the log.
    var skipped = 0
    var firstSkipped: (name: String, signature: String)?

    init() { manufacturerAD.reserveCapacity(64) }

    /// An update worth a report: new manufacturer data or a new RSSI.
    var carriesUpdate: Bool { hasManufacturerData || rssi != nil }

    mutating func reset() {
        address = nil
        addressType = nil
        hasManufacturerData = false
        manufacturerAD.removeAll(keepingCapacity: true)
        rssi = nil
        txPower = nil
        invalidatesManufacturerData = false
        invalidatesRSSI = false
        invalidatesTxPower = false
        skipped = 0
        firstSkipped = nil
    }

    private enum Key {
        case address, addressType, manufacturerData, rssi, txPower

        init?(_ name: UnsafePointer<CChar>) {
            if strcmp(name, "ManufacturerData") == 0 {
                self = .manufacturerData
            } else if strcmp(name, "RSSI") == 0 {
                self = .rssi
            } else if strcmp(name, "TxPower") == 0 {
                self = .txPower
            } else if strcmp(name, "Address") == 0 {
                self = .address
            } else if strcmp(name, "AddressType") == 0 {
                self = .addressType
            } else {
                return nil
            }
        }

        var name: String {
            switch self {
            case .address: "Address"
            case .addressType: "AddressType"
            case .manufacturerData: "ManufacturerData"
            case .rssi: "RSSI"
            case .txPower: "TxPower"
            }
        }
    }

    /// Reads the `a{sv}` at `reader` (and moves past it). Throws only when the dictionary itself
    /// is malformed; a bad value skips that property.
    mutating func parse(_ reader: inout DBusMessageReader) throws(DBusDecodingError) {
        var entries = try reader.enterArray(of: .dictEntry, expected: "a{sv}")
        while !entries.isAtEnd {
            var entry = try entries.enter(.dictEntry, expected: "{sv}")
            guard let key = try entry.withCString(.string, { Key($0) }) else { continue }
            let value = try entry.enter(.variant, expected: "v")
            do {
                try parse(key, value)
            } catch {
                if key == .manufacturerData {
                    hasManufacturerData = false
                    manufacturerAD.removeAll(keepingCapacity: true)
                }
                skipped += 1
                if firstSkipped == nil { firstSkipped = (key.name, value.signature) }
            }
        }
    }

    private mutating func parse(_ key: Key, _ variant: DBusMessageReader) throws(DBusDecodingError) {
        var value = variant
        switch key {
        case .rssi:
            rssi = Self.clamped(try value.int16())
        case .txPower:
            txPower = Self.clamped(try value.int16())
        case .address:
            address = try value.withCString(.string) { text throws(DBusDecodingError) in
                guard let address = Self.address(text, separator: UInt8(ascii: ":")) else {
                    throw variant.mismatch(expected: "an address AA:BB:CC:DD:EE:FF")
                }
                return address
            }
        case .addressType:
            addressType = try value.withCString(.string) { text throws(DBusDecodingError) in
                if strcmp(text, "public") == 0 { return .publicDevice }
                if strcmp(text, "random") == 0 { return .randomDevice }
                throw variant.mismatch(expected: "\"public\" or \"random\"")
            }
        case .manufacturerData:
            try parseManufacturerData(&value)
        }
    }

    private mutating func parseManufacturerData(_ value: inout DBusMessageReader) throws(DBusDecodingError) {
        manufacturerAD.removeAll(keepingCapacity: true)
        var entries = try value.enterArray(of: .dictEntry, expected: "a{qv}")
        while !entries.isAtEnd {
            var entry = try entries.enter(.dictEntry, expected: "{qv}")
            let company = try entry.uint16()
            var data = try entry.enter(.variant, expected: "v")
            let position = data.position
            try data.withBytes(expected: "ay") { bytes throws(DBusDecodingError) in
                guard bytes.count <= Self.maxManufacturerPayload else {
                    throw DBusDecodingError(
                        expected: "at most \(Self.maxManufacturerPayload) bytes", found: "ay of \(bytes.count)",
                        position: position)
                }
                AdvertisingDataBuilder.appendManufacturerData(companyID: company, payload: bytes, to: &manufacturerAD)
            }
        }
        hasManufacturerData = true
    }

    /// Reads the invalidated-property names (`as`) of a PropertiesChanged signal.
    mutating func parseInvalidated(_ reader: inout DBusMessageReader) throws(DBusDecodingError) {
        var names = try reader.enterArray(of: .string, expected: "as")
        while !names.isAtEnd {
            switch try names.withCString(.string, { Key($0) }) {
            case .manufacturerData: invalidatesManufacturerData = true
            case .rssi: invalidatesRSSI = true
            case .txPower: invalidatesTxPower = true
            default: break
            }
        }
    }

    /// dBm as BlueZ sends them (int16), clamped to the report's Int8; 127 means unknown.
    private static func clamped(_ value: Int16) -> Int8? {
        value == 127 ? nil : Int8(clamping: value)
    }

    /// Parses "AA:BB:CC:DD:EE:FF" (or with `_`, as in object paths) without allocating; the
    /// text must end after the sixth byte.
    static func address(_ text: UnsafePointer<CChar>, separator: UInt8) -> BluetoothAddress? {
        var value: UInt64 = 0
        for index in 0..<17 {
            let character = UInt8(bitPattern: text[index])
            if index % 3 == 2 {
                guard character == separator else { return nil }
                continue
            }
            let digit: UInt8
            switch character {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = character - UInt8(ascii: "0")
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = character - UInt8(ascii: "A") + 10
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = character - UInt8(ascii: "a") + 10
            default: return nil
            }
            value = value << 4 | UInt64(digit)
        }
        guard text[17] == 0 else { return nil }
        return BluetoothAddress(rawValue: value)
    }

    /// The address in a device object path under `adapterPath` ("<adapter>/dev_AA_BB_CC_DD_EE_FF");
    /// nil for any other path.
    static func deviceAddress(path: UnsafePointer<CChar>, adapterPath: [CChar]) -> BluetoothAddress? {
        // adapterPath is NUL-terminated; compare its characters, then "/dev_".
        let prefixLength = adapterPath.count - 1
        guard prefixLength > 0, strncmp(path, adapterPath, prefixLength) == 0 else { return nil }
        let rest = path + prefixLength
        guard strncmp(rest, "/dev_", 5) == 0 else { return nil }
        return address(rest + 5, separator: UInt8(ascii: "_"))
    }
}

/// The last manufacturer data, RSSI, TX power and address BlueZ reported for each device under
/// the adapter, so that a signal carrying only a new RSSI still yields a full report.
///
/// Bounded: past `capacity` devices the least recently updated one is forgotten (and counted),
/// so a crowd of devices with rotating random addresses cannot grow it without limit.
struct BlueZDeviceTracker {
    struct Device {
        /// The address in the object path: how signals name the device.
        let key: BluetoothAddress
        /// The Address property (the same in practice), reported.
        var address: BluetoothAddress
        var addressType: AddressType = .publicDevice
        /// AD structures ready to copy into a report; empty until BlueZ sent some.
        var manufacturerAD: [UInt8] = []
        var rssi: Int8?
        var txPower: Int8?
        fileprivate var lastSeen: UInt64 = 0
    }

    static let defaultCapacity = 1024

    let capacity: Int
    /// Devices forgotten to stay within `capacity`.
    private(set) var evictions = 0
    private var devices: [Device] = []
    private var slots: [BluetoothAddress: Int] = [:]
    private var clock: UInt64 = 0

    init(capacity: Int = defaultCapacity) {
        self.capacity = max(1, capacity)
        devices.reserveCapacity(min(self.capacity, 256))
    }

    var count: Int { devices.count }

    subscript(address: BluetoothAddress) -> Device? {
        slots[address].map { devices[$0] }
    }

    /// Applies one signal's properties to the device `key` (from its object path), creating it
    /// if needed. Returns the device's slot when the signal is an update to report: new
    /// manufacturer data or RSSI, for a device with manufacturer data. `properties` gets the
    /// replaced buffer back, so neither side allocates in steady state.
    mutating func apply(_ properties: inout BlueZDeviceProperties, to key: BluetoothAddress) -> Int? {
        let slot = slot(for: key)
        clock += 1
        devices[slot].lastSeen = clock
        if let address = properties.address { devices[slot].address = address }
        if let type = properties.addressType { devices[slot].addressType = type }
        if properties.hasManufacturerData {
            swap(&devices[slot].manufacturerAD, &properties.manufacturerAD)
        } else if properties.invalidatesManufacturerData {
            devices[slot].manufacturerAD.removeAll(keepingCapacity: true)
        }
        if let rssi = properties.rssi {
            devices[slot].rssi = rssi
        } else if properties.invalidatesRSSI {
            devices[slot].rssi = nil
        }
        if let tx = properties.txPower {
            devices[slot].txPower = tx
        } else if properties.invalidatesTxPower {
            devices[slot].txPower = nil
        }
        guard properties.carriesUpdate, !devices[slot].manufacturerAD.isEmpty else { return nil }
        return slot
    }

    mutating func remove(_ key: BluetoothAddress) {
        guard let slot = slots.removeValue(forKey: key) else { return }
        let last = devices.count - 1
        if slot != last {
            devices.swapAt(slot, last)
            slots[devices[slot].key] = slot
        }
        devices.removeLast()
    }

    mutating func removeAll() {
        devices.removeAll(keepingCapacity: true)
        slots.removeAll(keepingCapacity: true)
    }

    /// Builds the report for the device in `slot` in `buffer` (reused by the caller) and hands
    /// it to `body`; the report borrows `buffer`.
    func withReport<R>(slot: Int, timestamp: Int64, buffer: inout [UInt8], _ body: (AdvertisingReport) -> R) -> R {
        let device = devices[slot]
        buffer.removeAll(keepingCapacity: true)
        buffer.append(contentsOf: device.manufacturerAD)
        if let tx = device.txPower { AdvertisingDataBuilder.appendTXPowerLevel(tx, to: &buffer) }
        return buffer.withUnsafeBytes { bytes in
            body(
                AdvertisingReport(
                    timestamp: timestamp, origin: .bluezDevice, kind: .advNonconnInd,
                    properties: ExtendedEventProperties(legacy: .advNonconnInd), addressType: device.addressType,
                    address: device.address, rssi: device.rssi, data: AdvertisingData(bytes)))
        }
    }

    /// The slot for `key`, created (evicting the least recently updated device when full).
    private mutating func slot(for key: BluetoothAddress) -> Int {
        if let slot = slots[key] { return slot }
        if devices.count < capacity {
            devices.append(Device(key: key, address: key))
            slots[key] = devices.count - 1
            return devices.count - 1
        }
        var oldest = 0
        for index in devices.indices where devices[index].lastSeen < devices[oldest].lastSeen { oldest = index }
        slots[devices[oldest].key] = nil
        evictions += 1
        var reused = Device(key: key, address: key)
        swap(&reused.manufacturerAD, &devices[oldest].manufacturerAD)
        reused.manufacturerAD.removeAll(keepingCapacity: true)
        devices[oldest] = reused
        slots[key] = oldest
        return oldest
    }
}
