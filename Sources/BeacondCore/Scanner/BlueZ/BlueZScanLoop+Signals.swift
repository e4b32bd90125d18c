import BLEPayload
import CBlueZ
import Foundation
import Logging

/// Signal dispatch: BlueZ's ObjectManager and Properties signals, the bus's NameOwnerChanged,
/// the monitor's calls, and the device updates they carry to the sink.
extension BlueZScanLoop {
    /// The connection's message handler: monitor calls, then BlueZ's and the bus's signals.
    func handle(_ message: OpaquePointer) -> Bool {
        if let answer = monitor.handle(message) {
            if let reply = answer.reply { connection?.send(reply) }
            if let event = answer.event { monitorEvent(event) }
            return true
        }
        guard dbus_message_get_type(message) == DBUS_MESSAGE_TYPE_SIGNAL else { return false }
        // libdbus's own Disconnected has no sender.
        if dbus_message_is_signal(message, "org.freedesktop.DBus.Local", "Disconnected") != 0 {
            lost = true
            return true
        }
        guard let sender = dbus_message_get_sender(message) else { return false }
        let fromBlueZ = !bluezOwner.isEmpty && strcmp(sender, bluezOwner) == 0
        let objectManager = BlueZAdvertisementMonitor.objectManager
        do {
            if fromBlueZ, dbus_message_is_signal(message, "org.freedesktop.DBus.Properties", "PropertiesChanged") != 0 {
                try propertiesChanged(message)
            } else if fromBlueZ, dbus_message_is_signal(message, objectManager, "InterfacesAdded") != 0 {
                try interfacesAdded(message)
            } else if fromBlueZ, dbus_message_is_signal(message, objectManager, "InterfacesRemoved") != 0 {
                try interfacesRemoved(message)
            } else if strcmp(sender, "org.freedesktop.DBus") == 0,
                dbus_message_is_signal(message, "org.freedesktop.DBus", "NameOwnerChanged") != 0
            {
                try nameOwnerChanged(message)
            } else {
                return false
            }
        } catch {
            counters.malformedSignals.add(1, ordering: .relaxed)
            let member = TerminalText.logged(dbus_message_get_member(message).map { String(cString: $0) } ?? "?")
            let path = TerminalText.logged(dbus_message_get_path(message).map { String(cString: $0) } ?? "?")
            logger.limited(
                limiter: logLimiter, .debug, "bluez.malformed",
                "skipping a malformed \(member) signal from \(path): \(TerminalText.logged("\(error)"))")
        }
        return true
    }

    /// The device under our adapter that `path` names, if any.
    func deviceKey(_ path: UnsafePointer<CChar>) -> BluetoothAddress? {
        guard !adapterPathC.isEmpty else { return nil }
        return BlueZDeviceProperties.deviceAddress(path: path, adapterPath: adapterPathC)
    }

    func isOurAdapter(_ path: UnsafePointer<CChar>) -> Bool {
        if !adapterPathC.isEmpty { return strcmp(path, adapterPathC) == 0 }
        let length = strlen(path)
        let suffix = adapterSuffix.count - 1
        return length >= suffix && strcmp(path + (length - suffix), adapterSuffix) == 0
    }

    /// The object an ObjectManager signal names (its first argument): the device under our adapter
    /// it is (`key`), or, when it is none, whether it is the adapter by `isAdapter`.
    func signalObject(
        _ reader: inout DBusMessageReader, isAdapter: (UnsafePointer<CChar>) -> Bool
    ) throws(DBusDecodingError) -> (key: BluetoothAddress?, isAdapter: Bool) {
        try reader.withCString(.objectPath) { path in
            let key = deviceKey(path)
            return (key, key == nil && isAdapter(path))
        }
    }

    func propertiesChanged(_ message: OpaquePointer) throws(DBusDecodingError) {
        guard let path = dbus_message_get_path(message), !adapterPathC.isEmpty else { return }
        var reader = DBusMessageReader(message: message)
        let isDevice = try reader.withCString(.string) { strcmp($0, Self.deviceInterface) == 0 }
        guard isDevice else {
            if strcmp(path, adapterPathC) == 0 { try adapterPropertiesChanged(message) }
            return
        }
        guard let key = deviceKey(path) else { return }
        properties.reset()
        try properties.parse(&reader)
        if !reader.isAtEnd { try properties.parseInvalidated(&reader) }
        deviceUpdated(key, report: true)
    }

    /// Powered going off ends discovery (bluetoothd drops the sessions); coming back on
    /// restarts it.
    func adapterPropertiesChanged(_ message: OpaquePointer) throws(DBusDecodingError) {
        var reader = DBusMessageReader(message: message)
        guard try reader.string() == Self.adapterInterface,
            case .boolean(let powered)? = try reader.value()["Powered"]?.unwrapped
        else { return }
        if !powered, scanning {
            scanning = false
            down(.adapterOff(adapter))
        } else if powered, !scanning {
            retryAt = now
        }
    }

    func interfacesAdded(_ message: OpaquePointer) throws(DBusDecodingError) {
        var reader = DBusMessageReader(message: message)
        let (key, adapterAppeared) = try signalObject(&reader, isAdapter: isOurAdapter)
        if let key {
            try readDevice(&reader, key: key, report: true)
        } else if adapterAppeared, !scanning {
            var interfaces = try reader.enterArray(of: .dictEntry, expected: "a{sa{sv}}")
            while !interfaces.isAtEnd {
                var entry = try interfaces.enter(.dictEntry, expected: "{sa{sv}}")
                if try entry.string() == Self.adapterInterface {
                    logger.limited(limiter: logLimiter, .info, "bluez.adapter", "adapter \(adapter) appeared in BlueZ")
                    retryAt = now
                }
            }
        }
    }

    /// Reads the `a{sa{sv}}` of one object under our adapter and applies its Device1
    /// properties; reports when `report` and the properties make an update.
    func readDevice(_ reader: inout DBusMessageReader, key: BluetoothAddress, report: Bool) throws(DBusDecodingError) {
        var interfaces = try reader.enterArray(of: .dictEntry, expected: "a{sa{sv}}")
        while !interfaces.isAtEnd {
            var entry = try interfaces.enter(.dictEntry, expected: "{sa{sv}}")
            guard try entry.withCString(.string, { strcmp($0, Self.deviceInterface) == 0 }) else { continue }
            properties.reset()
            try properties.parse(&entry)
            deviceUpdated(key, report: report)
        }
    }

    func deviceUpdated(_ key: BluetoothAddress, report: Bool) {
        if properties.skipped > 0 { noteSkipped(key) }
        if properties.carriesUpdate {
            lastActivity = now
            counters.updates.add(1, ordering: .relaxed)
        }
        let evictions = tracker.evictions
        let slot = tracker.apply(&properties, to: key)
        if tracker.evictions != evictions { counters.evictions.add(tracker.evictions - evictions, ordering: .relaxed) }
        guard report, let slot else { return }
        let boot = MonotonicClock.bootMicros()
        tracker.withReport(slot: slot, timestamp: MonotonicClock.wallMicros(), buffer: &reportBuffer) { report in
            sink.receive(report, bootMicros: boot)
        }
        counters.reports.add(1, ordering: .relaxed)
        unflushed += 1
    }

    func noteSkipped(_ key: BluetoothAddress) {
        counters.skippedProperties.add(properties.skipped, ordering: .relaxed)
        guard let first = properties.firstSkipped else { return }
        let kind = first.name + " " + first.signature
        // Each odd (property, type) pair is logged once; a few dozen at most are remembered.
        guard loggedSkips.count < 32, loggedSkips.insert(kind).inserted else { return }
        let text =
            "skipping BlueZ property \(first.name) of unexpected type '\(first.signature)' (device \(key)); "
            + "further ones are only counted"
        logger.notice("\(text)")
    }

    func deliverBurst() {
        guard unflushed > 0 else { return }
        unflushed = 0
        sink.flush()
    }

    func interfacesRemoved(_ message: OpaquePointer) throws(DBusDecodingError) {
        var reader = DBusMessageReader(message: message)
        // Only an adapter whose path is known can be gone.
        let (key, isAdapter) = try signalObject(&reader) { !adapterPathC.isEmpty && strcmp($0, adapterPathC) == 0 }
        guard key != nil || isAdapter else { return }
        var names = try reader.enterArray(of: .string, expected: "as")
        while !names.isAtEnd {
            let name = try names.string()
            if let key, name == Self.deviceInterface {
                tracker.remove(key)
            } else if isAdapter, name == Self.adapterInterface {
                adapterGone(.adapterRemoved(adapter))
                return
            }
        }
    }

    func nameOwnerChanged(_ message: OpaquePointer) throws(DBusDecodingError) {
        var reader = DBusMessageReader(message: message)
        guard try reader.string() == Self.bluez else { return }
        _ = try reader.string()
        let newOwner = try reader.string()
        bluezOwner = newOwner.isEmpty ? [] : Array(newOwner.utf8CString)
        if newOwner.isEmpty {
            adapterGone(.bluetoothdLeft)
        } else {
            logger.limited(
                limiter: logLimiter, .info, "bluez.owner",
                "bluetoothd is on the system bus (\(TerminalText.logged(newOwner))): looking for \(adapter)")
            retryAt = now
        }
    }

    /// The adapter or bluetoothd went away: forget what BlueZ told us, report down, and wait
    /// for it to return (its signal makes the retry immediate).
    func adapterGone(_ failure: BlueZScannerFailure) {
        forgetAdapter()
        down(failure)
    }

    func monitorEvent(_ event: BlueZAdvertisementMonitor.Event) {
        switch event {
        case .activated:
            // Trusted without a sender check: the system bus denies method calls by default, and
            // BlueZ's bluetooth.conf lets only root send org.bluez.AdvertisementMonitor1 calls.
            monitorActive = true
            scheduleRefresh()
            logger.limited(
                limiter: logLimiter, .info, "bluez.monitor",
                "BlueZ activated the advertisement monitor on \(adapter)")
        case .released:
            monitorRegistered = false
            monitorActive = false
            monitorAbsence = .released
            scheduleRefresh()
            let restart =
                configuration.refreshInterval > 0
                ? "; discovery is restarted every \(DecimalText.format(micros: configuration.refreshInterval)) s"
                : ""
            logger.limited(
                limiter: logLimiter, .notice, "bluez.monitor",
                "BlueZ released the advertisement monitor on \(adapter): \(Self.withoutMonitor)\(restart)")
        case .deviceFound(let path):
            logger.limited(
                limiter: logLimiter, .debug, "bluez.monitor",
                "advertisement monitor: found \(TerminalText.logged(path))")
        case .deviceLost(let path):
            logger.limited(
                limiter: logLimiter, .debug, "bluez.monitor",
                "advertisement monitor: lost \(TerminalText.logged(path))")
        }
    }
}
