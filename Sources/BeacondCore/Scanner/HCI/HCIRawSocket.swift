import BLEPayload
import CBlueZ
import Glibc

/// Opens an adapter's raw HCI socket, filtered to the events the scanner reads.
package enum HCIRawSocket {
    package static let eventPacket: UInt8 = 0x04
    /// The kernel's stack-internal event: how raw sockets bound to no adapter hear that an
    /// adapter went down.
    static let stackInternalEvent: UInt8 = 0xFD

    /// Events the socket lets through: LE Meta, Command Complete, Command Status, and the
    /// stack-internal device events.
    static let filteredEvents: [UInt8] = [
        HCIEventCode.leMeta, HCIEventCode.commandComplete, HCIEventCode.commandStatus, stackInternalEvent,
    ]

    /// The filter masks in the kernel's layout: type t is bit t, event e is bit (e & 63).
    static func filterMasks(events: [UInt8]) -> (type: UInt32, low: UInt32, high: UInt32) {
        var low: UInt32 = 0
        var high: UInt32 = 0
        for event in events {
            let bit = Int(event & 63)
            if bit < 32 { low |= 1 << UInt32(bit) } else { high |= 1 << UInt32(bit - 32) }
        }
        return (1 << UInt32(eventPacket), low, high)
    }

    /// Opens `adapter` by name (never "the first adapter"), installs the HCI_FILTER and checks
    /// that the kernel kept it.
    static func open(adapter: String) throws(HCIScannerError) -> DescriptorHCITransport {
        let id = hci_devid(adapter)
        guard id >= 0 else {
            let code = errno
            if code == ENODEV || code == EINVAL {
                throw .noAdapter(adapter: adapter, known: knownAdapters())
            }
            throw .fromErrno(code, adapter: adapter, operation: "look up the adapter")
        }
        let descriptor = hci_open_dev(id)
        guard descriptor >= 0 else {
            let code = errno
            throw code == ENODEV
                ? .noAdapter(adapter: adapter, known: knownAdapters())
                : .fromErrno(code, adapter: adapter, operation: "open its raw HCI socket")
        }
        // The kernel says "hci1 went down" only on a socket bound to no adapter: without this one
        // `hciconfig hci1 down` went unnoticed and the scan stayed off after `up` (found on the real
        // stack, Tests/Stack). Opening it fails only without CAP_NET_RAW, which the filter check
        // below reports anyway.
        let transport = DescriptorHCITransport(
            descriptor: descriptor, deviceID: UInt16(truncatingIfNeeded: id),
            deviceEventDescriptor: beacond_hci_open_device_events())
        try installFilter(on: descriptor, adapter: adapter)
        return transport
    }

    /// Sets the filter, then reads it back: without CAP_NET_RAW the kernel silently ANDs it
    /// with its security filter, which has no LE Meta, and scanning would hear nothing.
    static func installFilter(on descriptor: Int32, adapter: String) throws(HCIScannerError) {
        let masks = filterMasks(events: filteredEvents)
        guard beacond_hci_set_filter(descriptor, masks.type, masks.low, masks.high) == 0 else {
            throw .fromErrno(errno, adapter: adapter, operation: "set the HCI_FILTER socket option")
        }
        var type: UInt32 = 0
        var low: UInt32 = 0
        var high: UInt32 = 0
        guard beacond_hci_get_filter(descriptor, &type, &low, &high) == 0 else {
            throw .fromErrno(errno, adapter: adapter, operation: "read the HCI_FILTER socket option back")
        }
        let required = filterMasks(events: [
            HCIEventCode.leMeta, HCIEventCode.commandComplete,
            HCIEventCode.commandStatus,
        ])
        guard type & required.type == required.type, low & required.low == required.low,
            high & required.high == required.high
        else { throw .leMetaFiltered(adapter: adapter) }
    }

    /// The names of the adapters the kernel knows ("hci0"), empty when it cannot say.
    static func knownAdapters() -> [String] {
        var ids = [UInt16](repeating: 0, count: 16)
        let count = ids.withUnsafeMutableBufferPointer { buffer in
            beacond_hci_device_ids(buffer.baseAddress, Int32(buffer.count))
        }
        guard count > 0 else { return [] }
        return ids.prefix(Int(count)).map { "hci\($0)" }
    }
}
