import CBlueZ
import Glibc
import Logging

extension HCIScannerError: AdvertiserFailure {}

extension BlueZScannerFailure: AdvertiserFailure {
    var description: String { text }
    /// Only the bus's policy is permanent: bluetoothd, the adapter and its power may come later.
    var isPermanent: Bool {
        if case .accessDenied = self { return true }
        return false
    }
}

/// The transmitter's `bluez` backend: bluetoothd advertises for it, through
/// `org.bluez.LEAdvertisingManager1.RegisterAdvertisement`, on a D-Bus connection and thread of
/// its own. The advertisement is an object beacond exports (`org.bluez.LEAdvertisement1`,
/// type "broadcast": non-connectable, no discoverable flags) whose ManufacturerData is the
/// frame, at `interval` (MinInterval = MaxInterval).
///
/// Each change of data unregisters the advertisement and registers the new one, which stops
/// and restarts it on the air as the `hci` backend does; nil data unregisters it. bluetoothd
/// leaving the bus, the adapter being removed or powered off, or bluetoothd releasing the
/// advertisement are recovered from with back-off. A stop unregisters it and sends nothing more.
///
/// The kernel sends a non-connectable advertisement from a non-resolvable private address,
/// not the adapter's public one (docs/beacon.md).
package final class BlueZAdvertiser: Sendable {
    package struct Configuration: Hashable, Sendable {
        package var adapter: String
        /// Advertising interval, µs (100 ms by default); bluetoothd takes whole milliseconds.
        package var interval: Int64 = 100_000
        /// A D-Bus address; nil for the system bus.
        package var busAddress: String?
        /// ms.
        package var callTimeout: Int32 = 5_000
        package var retryInitial: Int64 = 500_000
        package var retryMax: Int64 = 10_000_000
        package var objectPath = "/org/georacing/beacond/advertisement"

        package init(adapter: String) {
            self.adapter = adapter
        }
    }

    package let configuration: Configuration
    package let control: AdvertiserControl
    private let logger: Logger

    package init(
        configuration: Configuration, logger: Logger, onState: @escaping @Sendable (AdvertiserState) -> Void = { _ in }
    ) throws(WakeSignal.Failure) {
        self.configuration = configuration
        self.logger = logger
        control = try AdvertiserControl(logger: logger, onState: onState)
    }

    /// Runs until `stop()` or cancellation; returns once the advertisement is unregistered.
    /// Throws when the system bus's policy refuses us before we were ever up.
    package func run() async throws {
        try await BlockingThreadBridge.run(stop: control.stop) { [self] in
            let failure = control.lifecycle(
                adapter: configuration.adapter, retryInitial: configuration.retryInitial,
                retryMax: configuration.retryMax
            ) { (up) throws(BlueZScannerFailure) in
                let session = try BlueZAdvertisingSession(configuration: configuration, control: control)
                defer { session.close() }
                try session.serve(up: up, logger: logger)
            }
            if let failure { throw BlueZScannerError(description: failure.text) }
        }
    }

    /// The manufacturer-specific AD structures of `data`, as ManufacturerData's `a{qv}`.
    static func manufacturerData(_ data: [UInt8]) -> DBusValue {
        var entries: [DBusDictEntry] = []
        var offset = 0
        while offset < data.count {
            let length = Int(data[offset])
            guard length > 0, offset + 1 + length <= data.count else { break }
            if data[offset + 1] == 0xFF, length >= 3 {
                let company = UInt16(data[offset + 2]) | UInt16(data[offset + 3]) << 8
                let payload = Array(data[(offset + 4)..<(offset + 1 + length)])
                entries.append(DBusDictEntry(key: .uint16(company), value: .variant(.bytes(payload))))
            }
            offset += 1 + length
        }
        return .dictionary(key: "q", value: "v", entries)
    }

    /// The exported advertisement carrying `data`.
    static func advertisement(_ data: [UInt8], configuration: Configuration) -> DBusExportedObject {
        let milliseconds = UInt32(clamping: max(20, (configuration.interval + 500) / 1000))
        return DBusExportedObject(
            root: configuration.objectPath, path: configuration.objectPath,
            interface: BlueZAdvertisingSession.advertisementInterface,
            propertyValues: [
                "Type": .string("broadcast"),
                "ManufacturerData": manufacturerData(data),
                "MinInterval": .uint32(milliseconds),
                "MaxInterval": .uint32(milliseconds),
            ],
            methods: [.init(name: "Release")])
    }
}

/// One connection to the bus, used on the advertiser's thread only.
private final class BlueZAdvertisingSession {
    static let bluez = "org.bluez"
    static let managerInterface = "org.bluez.LEAdvertisingManager1"
    static let advertisementInterface = "org.bluez.LEAdvertisement1"
    static let adapterInterface = "org.bluez.Adapter1"

    let configuration: BlueZAdvertiser.Configuration
    let control: AdvertiserControl
    let connection: DBusConnection
    let adapterPath: String
    var bluezOwner = ""
    var exported: DBusExportedObject?
    /// Why the session ends, set by a signal or a call from bluetoothd.
    var ended: BlueZScannerFailure?

    init(configuration: BlueZAdvertiser.Configuration, control: AdvertiserControl) throws(BlueZScannerFailure) {
        self.configuration = configuration
        self.control = control
        adapterPath = "/org/bluez/" + configuration.adapter
        do throws(DBusCallError) {
            connection = try DBusConnection(address: configuration.busAddress)
        } catch {
            throw .noBus(error)
        }
        connection.setMessageHandler { [unowned self] message in handle(message) }
        do throws(DBusCallError) {
            let bluez = "sender='\(Self.bluez)',type='signal'"
            try connection.addMatch(
                "\(bluez),interface='org.freedesktop.DBus.ObjectManager',member='InterfacesRemoved'")
            try connection.addMatch("\(bluez),interface='org.freedesktop.DBus.Properties',path='\(adapterPath)'")
            try connection.addMatch(
                "sender='org.freedesktop.DBus',type='signal',interface='org.freedesktop.DBus',"
                    + "member='NameOwnerChanged',arg0='\(Self.bluez)'")
        } catch {
            connection.close()
            throw failure(error)
        }
    }

    func close() { connection.close() }

    private func failure(_ error: DBusCallError) -> BlueZScannerFailure {
        if error.isAccessDenied { return .accessDenied(error) }
        return error.isServiceMissing ? .noBluetoothd : .callFailed(error)
    }

    private func call(_ path: String, _ interface: String, _ member: String, _ arguments: [DBusValue] = [])
        throws(BlueZScannerFailure) -> DBusMessage
    {
        do {
            let message = try DBusMessage.methodCall(
                destination: path.hasPrefix("/org/bluez") ? Self.bluez : "org.freedesktop.DBus",
                path: path, interface: interface, member: member, autoStart: false, arguments: arguments)
            return try connection.call(message, timeout: configuration.callTimeout)
        } catch let error as DBusCallError {
            throw failure(error)
        } catch {
            throw .malformed("\(member): \(error)")
        }
    }

    /// Checks bluetoothd and the adapter, then follows the wanted data until a stop (returns
    /// with the advertisement unregistered) or a failure.
    func serve(up: () -> Void, logger: Logger) throws(BlueZScannerFailure) {
        let owner = try call("/org/freedesktop/DBus", "org.freedesktop.DBus", "GetNameOwner", [.string(Self.bluez)])
        let adapter: DBusMessage
        do throws(BlueZScannerFailure) {
            adapter = try call(adapterPath, DBusExportedObject.properties, "GetAll", [.string(Self.adapterInterface)])
        } catch {
            // bluetoothd has no such object (or, in a mock, no such interface on it).
            if case .callFailed(let error) = error, error.name.hasPrefix("org.freedesktop.DBus.Error.Unknown") {
                throw .noAdapter(configuration.adapter)
            }
            throw error
        }
        let powered: Bool
        do throws(DBusDecodingError) {
            var reader = owner.reader
            bluezOwner = try reader.string()
            reader = adapter.reader
            powered = try reader.value()["Powered"]?.unwrapped == .boolean(true)
        } catch {
            throw .malformed("unexpected reply while looking for \(configuration.adapter): \(error)")
        }
        guard powered else { throw .adapterOff(configuration.adapter) }
        logger.info("beacon transmitter on \(configuration.adapter): advertising through bluetoothd")
        up()
        control.report(.idle)
        var applied: [UInt8]?
        while true {
            connection.dispatchAll()
            if let ended { throw ended }
            if !connection.isConnected { throw .busLost }
            let (desired, stopping) = control.take()
            if stopping {
                if applied != nil { unregister(logger: logger) }
                return
            }
            if desired != applied {
                if applied != nil {
                    do throws(BlueZScannerFailure) {
                        _ = try call(
                            adapterPath, Self.managerInterface, "UnregisterAdvertisement", [.objectPath(path)])
                    } catch .callFailed(let error) where error.name == "org.bluez.Error.DoesNotExist" {
                        // bluetoothd dropped it already: nothing to stop.
                    }
                    applied = nil
                }
                if let desired {
                    try register(desired)
                    control.countFrame()
                    control.report(.advertising(mode: "bluez"))
                } else {
                    control.report(.idle)
                }
                applied = desired
                continue
            }
            if connection.hasQueuedMessages { continue }
            try waitForTraffic()
        }
    }

    private var path: String { configuration.objectPath }

    /// Sends RegisterAdvertisement and answers bluetoothd's reads of the object (it reads the
    /// properties before it replies) until the reply.
    private func register(_ data: [UInt8]) throws(BlueZScannerFailure) {
        exported = BlueZAdvertiser.advertisement(data, configuration: configuration)
        let pending: DBusPendingReply
        do {
            pending = try connection.callLater(
                try DBusMessage.methodCall(
                    destination: Self.bluez, path: adapterPath, interface: Self.managerInterface,
                    member: "RegisterAdvertisement", autoStart: false,
                    arguments: [.objectPath(path), .properties([:])]),
                timeout: configuration.callTimeout)
        } catch let error as DBusCallError {
            throw failure(error)
        } catch {
            throw .malformed("RegisterAdvertisement: \(error)")
        }
        while true {
            connection.dispatchAll()
            if let result = pending.result() {
                if case .failure(let error) = result { throw failure(error) }
                return
            }
            if let ended { throw ended }
            if !connection.readWrite(timeout: 50) { throw .busLost }
        }
    }

    private func unregister(logger: Logger) {
        do throws(BlueZScannerFailure) {
            _ = try call(adapterPath, Self.managerInterface, "UnregisterAdvertisement", [.objectPath(path)])
        } catch {
            logger.warning(
                "could not unregister the advertisement on \(configuration.adapter) while stopping: \(error)")
        }
    }

    /// Blocks until the bus or the wake signal has something, then reads what the bus sent.
    private func waitForTraffic() throws(BlueZScannerFailure) {
        // Replies to bluetoothd's reads may still be queued.
        connection.flush()
        var descriptor: Int32 = -1
        guard dbus_connection_get_unix_fd(connection.raw, &descriptor) != 0 else { throw .busLost }
        var probes = [
            pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0),
            pollfd(fd: control.wake.descriptor, events: Int16(POLLIN), revents: 0),
        ]
        _ = poll(&probes, 2, -1)
        if probes[0].revents != 0, !connection.readWrite(timeout: 0) { throw .busLost }
    }

    /// Calls to the advertisement, and the signals that end the session.
    private func handle(_ message: OpaquePointer) -> Bool {
        if let exported, let (reply, made) = exported.handle(message) {
            if let reply { connection.send(reply) }
            // Release: bluetoothd has already dropped the advertisement.
            if made?.member == "Release" { ended = .advertisementReleased(configuration.adapter) }
            return true
        }
        guard dbus_message_get_type(message) == DBUS_MESSAGE_TYPE_SIGNAL else { return false }
        if dbus_message_is_signal(message, "org.freedesktop.DBus.Local", "Disconnected") != 0 {
            ended = .busLost
            return true
        }
        guard let rawSender = dbus_message_get_sender(message) else { return false }
        let sender = String(cString: rawSender)
        var reader = DBusMessageReader(message: message)
        if sender == "org.freedesktop.DBus",
            dbus_message_is_signal(message, "org.freedesktop.DBus", "NameOwnerChanged") != 0
        {
            if (try? reader.string()) == Self.bluez { ended = .bluetoothdLeft }
            return true
        }
        guard sender == bluezOwner else { return false }
        if dbus_message_is_signal(message, DBusExportedObject.objectManager, "InterfacesRemoved") != 0 {
            if (try? reader.objectPath()) == adapterPath,
                var names = try? reader.enterArray(of: .string, expected: "as")
            {
                while !names.isAtEnd, let name = try? names.string() {
                    if name == Self.adapterInterface { ended = .adapterRemoved(configuration.adapter) }
                }
            }
            return true
        }
        if dbus_message_is_signal(message, DBusExportedObject.properties, "PropertiesChanged") != 0 {
            if (try? reader.string()) == Self.adapterInterface,
                case .boolean(false)? = (try? reader.value())?["Powered"]?.unwrapped
            {
                ended = .adapterOff(configuration.adapter)
            }
            return true
        }
        return false
    }
}
