// Target `dbus-values`: the bluez backend's D-Bus value decoding without a bus, compiled with the
// BlueZ D-Bus files of BeacondCore only (Fuzz/run.sh). The input is either a marshalled D-Bus
// message (libdbus validates the wire format, as it does for every message off the bus) or the
// fields of well-typed arguments of any shape (BlueZ's property names with values of any type,
// which is what a misbehaving peer on the bus can send); then:
// - DBusMessageReader.values() decodes every argument, and the values written into a new message
//   read back equal (decode(encode(x)) == x);
// - BlueZDeviceProperties parses the first argument as a device's a{sv} properties and, failing
//   that, as PropertiesChanged's invalidated list; the device address parsers take the path.
import BLEPayload
import CBlueZ

private let propertyNames = ["Address", "AddressType", "RSSI", "TxPower", "ManufacturerData", "Name", "UUIDs", "Alias"]

private func text(_ input: inout FuzzInput) -> String {
    let count = Int(input.u8() % 24)
    return String(decoding: input.take(count).filter { $0 != 0 }, as: UTF8.self)
}

private func basic(_ kind: UInt8, _ input: inout FuzzInput) -> DBusValue {
    switch kind % 12 {
    case 0: return .byte(input.u8())
    case 1: return .boolean(input.bool())
    case 2: return .int16(Int16(bitPattern: input.u16()))
    case 3: return .uint16(input.u16())
    case 4: return .int32(Int32(bitPattern: input.u32()))
    case 5: return .uint32(input.u32())
    case 6: return .int64(input.i64())
    case 7: return .uint64(input.u64())
    case 8:
        let number = Double(bitPattern: input.u64())
        return .double(number.isNaN ? 0 : number) // NaN is never equal to itself
    case 9: return .string(text(&input))
    case 10: return .bytes(input.take(Int(input.u8() % 64)))
    default: return .objectPath("/org/bluez/hci0/dev_" + String(input.u32(), radix: 16))
    }
}

/// A well-typed value of any shape (depth at most 4), with BlueZ's property names in its dictionaries.
private func value(_ input: inout FuzzInput, depth: Int = 0) -> DBusValue {
    let kind = input.u8()
    guard depth < 4 else { return basic(kind, &input) }
    switch kind % 16 {
    case 12:
        return .variant(value(&input, depth: depth + 1))
    case 13:
        var entries: [DBusDictEntry] = []
        for _ in 0..<Int(input.u8() % 6) {
            let name = input.bool() ? propertyNames[Int(input.u8()) % propertyNames.count] : text(&input)
            entries.append(DBusDictEntry(key: .string(name), value: .variant(value(&input, depth: depth + 1))))
        }
        return .dictionary(key: "s", value: "v", entries)
    case 14:
        var entries: [DBusDictEntry] = []
        for _ in 0..<Int(input.u8() % 4) {
            entries.append(DBusDictEntry(key: .uint16(input.u16()), value: .variant(value(&input, depth: depth + 1))))
        }
        return .dictionary(key: "q", value: "v", entries)
    case 15:
        return .structure([value(&input, depth: depth + 1), value(&input, depth: depth + 1)])
    default:
        return basic(kind, &input)
    }
}

/// The message the input stands for: marshalled bytes as they are (libdbus validates them), or
/// arguments built from the bytes' fields.
private func message(_ input: inout FuzzInput) -> DBusMessage? {
    if input.u8() & 1 == 0 {
        let rest = input.rest()
        guard !rest.isEmpty else { return nil } // libdbus asserts on a null buffer
        var error = DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        let raw = rest.withUnsafeBytes { bytes in
            bytes.withMemoryRebound(to: CChar.self) { chars in
                dbus_message_demarshal(chars.baseAddress, Int32(clamping: chars.count), &error)
            }
        }
        return raw.map { DBusMessage(owning: $0) }
    }
    var arguments: [DBusValue] = []
    for _ in 0..<(1 + Int(input.u8() % 3)) { arguments.append(value(&input)) }
    return try? DBusMessage.methodCall(
        destination: "org.bluez", path: "/org/bluez/hci0/dev_C0_FF_EE_12_34_56",
        interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged", arguments: arguments)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDBusValues(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var input = FuzzInput(data, size)
    guard let message = message(&input) else { return 0 }

    var reader = message.reader
    if let values = try? reader.values() {
        if let again = try? DBusMessage.methodCall(
            destination: "org.bluez", path: "/org/bluez/hci0", interface: "org.bluez.Fuzz", member: "Echo",
            arguments: values)
        {
            var second = again.reader
            let decoded = try? second.values()
            fuzzCheck(decoded == values, "\(values) written and read back as \(String(describing: decoded))")
        }
    }

    var properties = BlueZDeviceProperties()
    var first = message.reader
    do {
        try properties.parse(&first)
    } catch {
        var invalidated = message.reader
        try? properties.parseInvalidated(&invalidated)
    }
    fuzzCheck(
        properties.manufacturerAD.count <= 1 << 20, "manufacturer data of \(properties.manufacturerAD.count) bytes")
    if let path = dbus_message_get_path(message.raw) {
        _ = BlueZDeviceProperties.deviceAddress(path: path, adapterPath: Array("/org/bluez/hci0".utf8CString))
        _ = BlueZDeviceProperties.address(path, separator: UInt8(ascii: "_"))
    }
    return 0
}

func fuzzSeeds(_ sources: SeedSources) -> [[UInt8]] {
    let argumentLists: [[DBusValue]] = [
        [
            .properties([
                "Address": .string("C0:FF:EE:12:34:56"), "AddressType": .string("random"), "RSSI": .int16(-60),
                "TxPower": .int16(-4), "Name": .string("GeoRacing"),
                "ManufacturerData": .dictionary(
                    key: "q", value: "v",
                    [DBusDictEntry(key: .uint16(0x1234), value: .variant(.bytes([1, 0, 3, 2, 0, 0, 9, 10])))]),
                "ServiceData": .dictionary(key: "s", value: "v", []),
            ])
        ],
        [.string("org.bluez.Device1"), .properties(["RSSI": .int16(-70)]), .array(element: "s", [.string("TxPower")])],
        [.objectPath("/org/bluez/hci0/dev_C0_FF_EE_12_34_56"), .dictionary(key: "s", value: "a{sv}", [])],
        [.variant(.variant(.int16(3))), .structure([.byte(0), .bytes([1, 2])])],
    ]
    var seeds: [[UInt8]] = []
    for arguments in argumentLists {
        guard
            let message = try? DBusMessage.methodCall(
                destination: "org.bluez", path: "/org/bluez/hci0/dev_C0_FF_EE_12_34_56",
                interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged", arguments: arguments)
        else { continue }
        var bytes: UnsafeMutablePointer<CChar>?
        var length: Int32 = 0
        guard dbus_message_marshal(message.raw, &bytes, &length) != 0, let bytes else { continue }
        seeds.append([0] + Array(UnsafeRawBufferPointer(start: bytes, count: Int(length))))
        dbus_free(bytes)
    }
    seeds += [
        [1, 0, 13, 3, 1, 2, 2, 0xFF, 0xC4, 1, 4, 14, 1, 0x12, 0x34, 10, 8, 1, 0, 3, 2, 0, 0, 9, 10], [1, 1, 15, 9, 3],
    ]
    return seeds
}
