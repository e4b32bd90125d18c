import BLEPayload
import CBlueZ
import Foundation
import Logging

/// Starting and stopping discovery: the adapter from GetManagedObjects, the discovery filter,
/// the advertisement monitor's registration, the silence restart and the shutdown teardown.
extension BlueZScanLoop {
    /// Finds the adapter, sets the discovery filter, starts discovery and registers the
    /// monitor. Any failure reports `down` and schedules a retry.
    func start() {
        guard let connection else { return }
        let found: (path: String?, powered: Bool, hasMonitorManager: Bool)
        do {
            let owner = try connection.call(
                try DBusMessage.methodCall(
                    destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                    interface: "org.freedesktop.DBus", member: "GetNameOwner",
                    arguments: [.string(Self.bluez)]),
                timeout: configuration.callTimeout)
            var reader = owner.reader
            bluezOwner = Array(try reader.string().utf8CString)
            let reply = try connection.call(
                try DBusMessage.methodCall(
                    destination: Self.bluez, path: "/",
                    interface: BlueZAdvertisementMonitor.objectManager,
                    member: "GetManagedObjects", autoStart: false),
                timeout: configuration.callTimeout)
            found = try readManagedObjects(reply)
        } catch let error as DBusCallError {
            down(error.isServiceMissing ? .noBluetoothd : failure(error))
            return
        } catch {
            down(.malformed("unexpected reply while looking for \(adapter): \(error)"))
            return
        }
        guard let path = found.path else {
            down(.noAdapter(adapter))
            return
        }
        guard found.powered else {
            down(.adapterOff(adapter))
            return
        }
        do {
            try startDiscovery(connection, adapterPath: path)
        } catch let error as DBusCallError {
            down(failure(error))
            return
        } catch {
            down(.malformed("\(error)"))
            return
        }
        scanning = true
        lastActivity = now
        if found.hasMonitorManager {
            if !monitorActive { monitorAbsence = .notActivated }
            registerMonitor(connection, adapterPath: path)
        } else {
            monitorActive = false
            monitorAbsence = .noManager
            noteMonitorMissing()
        }
        scheduleRefresh()
        everUp = true
        backoff.succeeded()
        sink.scannerStateChanged(.up, detail: "scanning on \(adapter) through BlueZ")
    }

    /// Says once that BlueZ has no monitor manager: with the refresh on, its own line says why
    /// discovery is restarted.
    func noteMonitorMissing() {
        guard !loggedMonitorMissing else { return }
        loggedMonitorMissing = true
        guard configuration.refreshInterval <= 0 else {
            if !loggedRefresh { logRefresh() }
            return
        }
        let text =
            "BlueZ offers no advertisement monitor on \(adapter) (AdvertisementMonitorManager1): "
            + Self.withoutMonitor + " (scanner.bluez_refresh_s is 0: discovery is not restarted for it)"
        logger.notice("\(text)")
    }

    func failure(_ error: DBusCallError) -> BlueZScannerFailure {
        error.isAccessDenied ? .accessDenied(error) : .callFailed(error)
    }

    func startDiscovery(_ connection: DBusConnection, adapterPath: String) throws {
        let filter = DBusValue.properties(["Transport": .string("le"), "DuplicateData": .boolean(true)])
        _ = try connection.call(
            try DBusMessage.methodCall(
                destination: Self.bluez, path: adapterPath, interface: Self.adapterInterface,
                member: "SetDiscoveryFilter", autoStart: false, arguments: [filter]),
            timeout: configuration.callTimeout)
        let start = try DBusMessage.methodCall(
            destination: Self.bluez, path: adapterPath,
            interface: Self.adapterInterface,
            member: "StartDiscovery", autoStart: false)
        do throws(DBusCallError) {
            _ = try connection.call(start, timeout: configuration.callTimeout)
        } catch  where error.name == "org.bluez.Error.InProgress" {
            // This connection's discovery session is already running.
        }
    }

    /// Sends RegisterMonitor without waiting: bluetoothd calls back into our object tree
    /// (GetManagedObjects) before it replies, and a blocking call would not answer it.
    func registerMonitor(_ connection: DBusConnection, adapterPath: String) {
        guard !monitorRegistered, pendingRegistration == nil else { return }
        do {
            let call = try DBusMessage.methodCall(
                destination: Self.bluez, path: adapterPath, interface: BlueZAdvertisementMonitor.managerInterface,
                member: "RegisterMonitor", autoStart: false, arguments: [.objectPath(monitor.root)])
            pendingRegistration = try connection.callLater(call, timeout: Self.registerTimeout)
        } catch {
            monitorAbsence = .notRegistered
            let text =
                "cannot register the advertisement monitor on \(adapter): \(error); "
                + "repeats depend on the controller's duplicate filter"
            logger.notice("\(text)")
        }
    }

    func checkRegistration() {
        guard let pending = pendingRegistration, let result = pending.result() else { return }
        pendingRegistration = nil
        switch result {
        case .success:
            monitorRegistered = true
            logger.info(
                "advertisement monitor \(monitor.root) registered on \(adapter): repeated advertisements are reported")
        case .failure(let error) where error.name == "org.bluez.Error.AlreadyExists":
            monitorRegistered = true
        case .failure(let error):
            monitorAbsence = .refused
            logger.notice("BlueZ refused the advertisement monitor on \(adapter): \(error); \(Self.withoutMonitor)")
        }
    }

    /// Restarts discovery when nothing was heard for `silenceRestart`.
    func checkSilence() {
        guard scanning, configuration.silenceRestart > 0, let connection, let adapterPath,
            now - lastActivity > configuration.silenceRestart
        else { return }
        lastActivity = now
        let seconds = configuration.silenceRestart / 1_000_000
        logger.limited(
            limiter: logLimiter, .info, "scanner.restart",
            "no BlueZ device updates for \(seconds) s: restarting discovery on \(adapter)")
        stopDiscovery(connection, adapterPath: adapterPath, timeout: configuration.callTimeout)
        do {
            try startDiscovery(connection, adapterPath: adapterPath)
            scheduleRefresh()
        } catch let error as DBusCallError {
            scanning = false
            down(failure(error))
        } catch {
            scanning = false
            down(.malformed("\(error)"))
        }
    }

    func stopDiscovery(_ connection: DBusConnection, adapterPath: String, timeout: Int32) {
        do {
            try callStopDiscovery(connection, adapterPath: adapterPath, timeout: timeout)
        } catch {
            logger.debug("StopDiscovery on \(adapterPath): \(error)")
        }
    }

    func callStopDiscovery(_ connection: DBusConnection, adapterPath: String, timeout: Int32) throws {
        _ = try connection.call(
            try DBusMessage.methodCall(
                destination: Self.bluez, path: adapterPath, interface: Self.adapterInterface,
                member: "StopDiscovery", autoStart: false),
            timeout: timeout)
    }

    /// On shutdown: the monitor and the discovery session go (bluetoothd would also drop them
    /// when the connection closes).
    func teardown(_ connection: DBusConnection) {
        guard let adapterPath else { return }
        if monitorRegistered || pendingRegistration != nil {
            do {
                _ = try connection.call(
                    try DBusMessage.methodCall(
                        destination: Self.bluez, path: adapterPath,
                        interface: BlueZAdvertisementMonitor.managerInterface,
                        member: "UnregisterMonitor", autoStart: false,
                        arguments: [.objectPath(monitor.root)]),
                    timeout: Self.teardownTimeout)
            } catch {
                logger.debug("UnregisterMonitor on \(adapterPath): \(error)")
            }
        }
        if scanning { stopDiscovery(connection, adapterPath: adapterPath, timeout: Self.teardownTimeout) }
    }

    /// Finds our adapter in GetManagedObjects' reply (`a{oa{sa{sv}}}`), then learns the devices
    /// under it. Devices already present are not reported: their properties carry no time, and
    /// the next advertisement updates them.
    func readManagedObjects(_ reply: DBusMessage) throws(DBusDecodingError)
        -> (path: String?, powered: Bool, hasMonitorManager: Bool)
    {
        var path: String?
        var powered = true
        var hasMonitorManager = false
        var reader = reply.reader
        var objects = try reader.enterArray(of: .dictEntry, expected: "a{oa{sa{sv}}}")
        while !objects.isAtEnd {
            var object = try objects.enter(.dictEntry, expected: "{oa{sa{sv}}}")
            let objectPath = try object.objectPath()
            guard objectPath.hasSuffix("/" + adapter) else { continue }
            var interfaces = try object.enterArray(of: .dictEntry, expected: "a{sa{sv}}")
            var isAdapter = false
            var monitorManager = false
            var objectPowered = true
            while !interfaces.isAtEnd {
                var entry = try interfaces.enter(.dictEntry, expected: "{sa{sv}}")
                let name = try entry.string()
                if name == Self.adapterInterface {
                    isAdapter = true
                    if case .boolean(let value)? = try entry.value()["Powered"]?.unwrapped { objectPowered = value }
                } else if name == BlueZAdvertisementMonitor.managerInterface {
                    monitorManager = true
                }
            }
            if isAdapter {
                path = objectPath
                powered = objectPowered
                hasMonitorManager = monitorManager
                break
            }
        }
        setAdapter(path)
        guard path != nil else { return (nil, powered, false) }
        tracker.removeAll()
        reader = reply.reader
        objects = try reader.enterArray(of: .dictEntry, expected: "a{oa{sa{sv}}}")
        while !objects.isAtEnd {
            var object = try objects.enter(.dictEntry, expected: "{oa{sa{sv}}}")
            guard let key = try object.withCString(.objectPath, { deviceKey($0) }) else { continue }
            try readDevice(&object, key: key, report: false)
        }
        return (path, powered, hasMonitorManager)
    }
}
