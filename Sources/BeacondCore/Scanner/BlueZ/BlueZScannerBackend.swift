import BLEPayload
import CBlueZ
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// Settings of the `bluez` backend.
struct BlueZScannerConfiguration: Sendable {
    var adapter: String = DaemonConfiguration.Scanner.defaultAdapter
    var companyID: UInt16 = GeoRacingSignal.defaultCompanyID
    /// Restart discovery after this long (µs) without any device update; 0 turns this off.
    var silenceRestart: Int64 = DaemonConfiguration.Scanner.defaultSilenceRestart
    /// What to do when the first start fails (no system bus, no bluetoothd, no such adapter,
    /// access denied): true (the daemon) stays down and retries with backoff; false (`beacond
    /// scan`) makes `run()` throw the reason at once. Failures after the first start are always
    /// retried.
    var retriesMissingAdapter = true
    /// A D-Bus address to use instead of the system bus (tests); nil: the system bus, which
    /// honours `DBUS_SYSTEM_BUS_ADDRESS`.
    var busAddress: String?
    var monitorRoot = BlueZAdvertisementMonitor.defaultRoot
    var maxDevices = BlueZDeviceTracker.defaultCapacity
    /// Timeout of each blocking call to bluetoothd, ms.
    var callTimeout: Int32 = 5000
    /// Retry delays (µs): the first, doubled after each failure up to the last.
    var initialBackoff: Int64 = 1_000_000
    var maxBackoff: Int64 = 30_000_000

    init() {}

    init(_ scanner: DaemonConfiguration.Scanner, retriesMissingAdapter: Bool) {
        adapter = scanner.adapter
        companyID = scanner.companyID
        silenceRestart = scanner.silenceRestart
        self.retriesMissingAdapter = retriesMissingAdapter
    }
}

/// The bluez backend could not start and was asked not to retry (`retriesMissingAdapter` false).
struct BlueZScannerError: Error, CustomStringConvertible {
    let description: String
}

/// What the bluez backend has seen, readable from any thread.
final class BlueZScannerCounters: Sendable {
    /// Device1 signals carrying ManufacturerData or RSSI.
    let updates = Atomic<Int>(0)
    /// Reports handed to the sink.
    let reports = Atomic<Int>(0)
    /// Properties skipped for an unexpected type.
    let skippedProperties = Atomic<Int>(0)
    /// Signals whose shape was wrong as a whole.
    let malformedSignals = Atomic<Int>(0)
    /// Devices forgotten to keep the table bounded.
    let evictions = Atomic<Int>(0)

    /// The counters for a status reply (`status.bluez`).
    var status: BlueZStatus {
        var status = BlueZStatus()
        status.updates = updates.load(ordering: .relaxed)
        status.reports = reports.load(ordering: .relaxed)
        status.skippedProperties = skippedProperties.load(ordering: .relaxed)
        status.malformedSignals = malformedSignals.load(ordering: .relaxed)
        status.evictedDevices = evictions.load(ordering: .relaxed)
        return status
    }
}

/// `--backend bluez`: scans through bluetoothd over D-Bus.
///
/// One thread owns a private libdbus connection to the system bus. It finds the adapter with
/// GetManagedObjects, sets an LE discovery filter with duplicate data, starts discovery,
/// registers an advertisement monitor where BlueZ offers one (see `BlueZAdvertisementMonitor`),
/// and turns every Device1 update carrying ManufacturerData or RSSI into one report for the
/// sink. It never exits on its own: a missing bus, bluetoothd or adapter is reported as `down`
/// with the reason and retried (1 s doubling to 30 s, sooner when BlueZ signals the adapter's
/// return). Graceful shutdown stops discovery and ends the thread within about 100 ms.
final class BlueZScannerBackend: Service, Sendable {
    let configuration: BlueZScannerConfiguration
    let counters = BlueZScannerCounters()
    private let sink: any AdvertisementSink
    private let logger: Logger
    fileprivate let logLimiter: LogRateLimiter
    private let stopping = Atomic<Bool>(false)

    init(configuration: BlueZScannerConfiguration, sink: any AdvertisementSink, logger: Logger,
         logLimiter: LogRateLimiter = LogRateLimiter()) {
        self.configuration = configuration
        self.sink = sink
        self.logger = logger
        self.logLimiter = logLimiter
    }

    func run() async throws {
        let completion = ThreadCompletion()
        _ = try PosixThread.start(detached: true) { [self] in
            let scanner = BlueZScanLoop(backend: self)
            completion.finish(Result { try scanner.run() })
        }
        let result = await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                await completion.wait()
            } onGracefulShutdown: {
                self.stop()
            }
        } onCancel: {
            self.stop()
        }
        try result.get()
    }

    /// Asks the thread to stop discovery and return.
    func stop() { stopping.store(true, ordering: .relaxed) }

    fileprivate var isStopping: Bool { stopping.load(ordering: .relaxed) }
    fileprivate var scanSink: any AdvertisementSink { sink }
    fileprivate var log: Logger { logger }
}

/// The scanning thread's result, awaited by `run()`.
private final class ThreadCompletion: Sendable {
    private struct State {
        var result: Result<Void, any Error>?
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())

    func finish(_ result: Result<Void, any Error>) {
        let waiter = state.withLock { state in
            state.result = result
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    func wait() async -> Result<Void, any Error> {
        await withCheckedContinuation { continuation in
            let finished = state.withLock { state in
                if state.result != nil { return true }
                state.waiter = continuation
                return false
            }
            if finished { continuation.resume() }
        }
        return state.withLock { $0.result } ?? .success(())
    }
}

/// Why the scanner is down; each is retried.
private enum ScannerFailure {
    case noBus(DBusCallError)
    case busLost
    case noBluetoothd
    case bluetoothdLeft
    case noAdapter(String)
    case adapterRemoved(String)
    case adapterOff(String)
    case accessDenied(DBusCallError)
    case callFailed(DBusCallError)
    case malformed(String)

    var text: String {
        switch self {
        case .noBus(let error): "cannot connect to the system bus (\(error.message))"
        case .busLost: "lost the system bus connection"
        case .noBluetoothd: "bluetoothd is not running (nobody owns org.bluez on the system bus)"
        case .bluetoothdLeft: "bluetoothd left the system bus"
        case .noAdapter(let name): "adapter \(name) not found in BlueZ"
        case .adapterRemoved(let name): "adapter \(name) was removed"
        case .adapterOff(let name): "adapter \(name) is powered off"
        case .accessDenied(let error):
            "the system bus denied \(error.operation): this user must be allowed by bluetoothd's D-Bus policy "
                + "(bluetooth.conf in /usr/share/dbus-1/system.d or /etc/dbus-1/system.d; on Debian, join the bluetooth group) "
                + "(\(error.message))"
        case .callFailed(let error): "\(error)"
        case .malformed(let text): text
        }
    }
}

/// Everything the scanning thread owns. Created and used on that thread only.
private final class BlueZScanLoop {
    static let bluez = "org.bluez"
    static let adapterInterface = "org.bluez.Adapter1"
    static let deviceInterface = "org.bluez.Device1"
    static let pollInterval: Int64 = 100_000
    static let teardownTimeout: Int32 = 1000
    static let registerTimeout: Int32 = 10_000

    private let backend: BlueZScannerBackend
    private let configuration: BlueZScannerConfiguration
    private let sink: any AdvertisementSink
    private let logger: Logger
    private let logLimiter: LogRateLimiter
    private let counters: BlueZScannerCounters
    private let monitor: BlueZAdvertisementMonitor
    /// "/hci0", NUL-terminated: the suffix that names our adapter's object path.
    private let adapterSuffix: [CChar]

    private var backoff: Int64
    private var retryAt: Int64?
    private var everUp = false
    private var fatal: BlueZScannerError?

    // Per connection.
    private var connection: DBusConnection?
    private var lost = false
    /// The unique name owning org.bluez, NUL-terminated; BlueZ signals from anyone else are
    /// ignored, so a local process cannot inject devices. Empty when bluetoothd is not there.
    private var bluezOwner: [CChar] = []
    private var adapterPath: String?
    /// `adapterPath`, NUL-terminated, for allocation-free comparisons; empty when unknown.
    private var adapterPathC: [CChar] = []
    private var scanning = false
    private var pendingRegistration: DBusPendingReply?
    private var monitorRegistered = false
    private var lastActivity: Int64 = 0

    private var tracker: BlueZDeviceTracker
    private var properties = BlueZDeviceProperties()
    private var reportBuffer: [UInt8] = []
    private var unflushed = 0
    private var loggedMonitorMissing = false
    private var loggedSkips: Set<String> = []

    init(backend: BlueZScannerBackend) {
        self.backend = backend
        configuration = backend.configuration
        sink = backend.scanSink
        logger = backend.log
        logLimiter = backend.logLimiter
        counters = backend.counters
        monitor = BlueZAdvertisementMonitor(root: configuration.monitorRoot, companyID: configuration.companyID)
        adapterSuffix = Array(("/" + configuration.adapter).utf8CString)
        backoff = configuration.initialBackoff
        tracker = BlueZDeviceTracker(capacity: configuration.maxDevices)
        reportBuffer.reserveCapacity(256)
    }

    private var now: Int64 { MonotonicClock.micros() }
    private var adapter: String { configuration.adapter }

    // MARK: Connection loop

    func run() throws {
        defer { logSummary() }
        while !backend.isStopping {
            if let retryAt { sleep(until: retryAt) }
            if backend.isStopping { break }
            retryAt = nil
            let connection: DBusConnection
            do throws(DBusCallError) {
                connection = try DBusConnection(address: configuration.busAddress)
            } catch {
                down(.noBus(error))
                if let fatal { throw fatal }
                continue
            }
            lost = false
            self.connection = connection
            connection.setMessageHandler { [unowned self] message in self.handle(message) }
            do throws(DBusCallError) {
                try subscribe(connection)
                session(connection)
            } catch {
                down(.callFailed(error))
            }
            if !backend.isStopping, lost || !connection.isConnected { down(.busLost) }
            if backend.isStopping, connection.isConnected { teardown(connection) }
            connection.close()
            forgetConnection()
            if let fatal { throw fatal }
        }
    }

    private func subscribe(_ connection: DBusConnection) throws(DBusCallError) {
        let bluez = "sender='\(Self.bluez)',type='signal'"
        try connection.addMatch("\(bluez),interface='org.freedesktop.DBus.ObjectManager',path='/'")
        try connection.addMatch("\(bluez),interface='org.freedesktop.DBus.Properties',member='PropertiesChanged'")
        try connection.addMatch("sender='org.freedesktop.DBus',type='signal',interface='org.freedesktop.DBus',"
                                + "member='NameOwnerChanged',arg0='\(Self.bluez)'")
    }

    /// Runs one connection until it is lost, the backend stops, or a start failure is fatal.
    private func session(_ connection: DBusConnection) {
        retryAt = now
        while !backend.isStopping, fatal == nil {
            connection.dispatchAll()
            deliverBurst()
            if lost || !connection.isConnected { return }
            checkRegistration()
            checkSilence()
            if let due = retryAt, now >= due {
                retryAt = nil
                start()
                continue
            }
            if connection.hasQueuedMessages { continue }
            let wait = min(Self.pollInterval, max(0, (retryAt ?? .max) - now))
            if !connection.readWrite(timeout: Int32(max(1, wait / 1000))) {
                connection.dispatchAll()
                deliverBurst()
                lost = true
                return
            }
        }
    }

    private func forgetConnection() {
        connection = nil
        bluezOwner = []
        forgetAdapter()
    }

    /// Forgets the adapter, its discovery and monitor, and the devices under it.
    private func forgetAdapter() {
        pendingRegistration?.cancel()
        pendingRegistration = nil
        monitorRegistered = false
        scanning = false
        setAdapter(nil)
        tracker.removeAll()
    }

    private func setAdapter(_ path: String?) {
        adapterPath = path
        adapterPathC = path.map { Array($0.utf8CString) } ?? []
    }

    /// Sleeps until `deadline` (monotonic µs) in short steps, so a stop is noticed promptly.
    private func sleep(until deadline: Int64) {
        while !backend.isStopping {
            let left = deadline - now
            if left <= 0 { return }
            usleep(UInt32(min(left, Self.pollInterval)))
        }
    }

    // MARK: Starting discovery

    /// Finds the adapter, sets the discovery filter, starts discovery and registers the
    /// monitor. Any failure reports `down` and schedules a retry.
    private func start() {
        guard let connection else { return }
        let found: (path: String?, powered: Bool, hasMonitorManager: Bool)
        do {
            let owner = try connection.call(
                try DBusMessage.methodCall(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                           interface: "org.freedesktop.DBus", member: "GetNameOwner",
                                           arguments: [.string(Self.bluez)]),
                timeout: configuration.callTimeout)
            var reader = owner.reader
            bluezOwner = Array(try reader.string().utf8CString)
            let reply = try connection.call(
                try DBusMessage.methodCall(destination: Self.bluez, path: "/", interface: BlueZAdvertisementMonitor.objectManager,
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
            registerMonitor(connection, adapterPath: path)
        } else if !loggedMonitorMissing {
            loggedMonitorMissing = true
            logger.notice("BlueZ offers no advertisement monitor on \(adapter) (AdvertisementMonitorManager1): an unchanged advertisement is repeated only if the controller's duplicate filter lets it through")
        }
        everUp = true
        backoff = configuration.initialBackoff
        sink.scannerStateChanged(.up, detail: "scanning on \(adapter) through BlueZ")
    }

    private func failure(_ error: DBusCallError) -> ScannerFailure {
        error.isAccessDenied ? .accessDenied(error) : .callFailed(error)
    }

    private func startDiscovery(_ connection: DBusConnection, adapterPath: String) throws {
        let filter = DBusValue.properties(["Transport": .string("le"), "DuplicateData": .boolean(true)])
        _ = try connection.call(
            try DBusMessage.methodCall(destination: Self.bluez, path: adapterPath, interface: Self.adapterInterface,
                                       member: "SetDiscoveryFilter", autoStart: false, arguments: [filter]),
            timeout: configuration.callTimeout)
        let start = try DBusMessage.methodCall(destination: Self.bluez, path: adapterPath, interface: Self.adapterInterface,
                                               member: "StartDiscovery", autoStart: false)
        do throws(DBusCallError) {
            _ = try connection.call(start, timeout: configuration.callTimeout)
        } catch where error.name == "org.bluez.Error.InProgress" {
            // This connection's discovery session is already running.
        }
    }

    /// Sends RegisterMonitor without waiting: bluetoothd calls back into our object tree
    /// (GetManagedObjects) before it replies, and a blocking call would not answer it.
    private func registerMonitor(_ connection: DBusConnection, adapterPath: String) {
        guard !monitorRegistered, pendingRegistration == nil else { return }
        do {
            let call = try DBusMessage.methodCall(
                destination: Self.bluez, path: adapterPath, interface: BlueZAdvertisementMonitor.managerInterface,
                member: "RegisterMonitor", autoStart: false, arguments: [.objectPath(monitor.root)])
            pendingRegistration = try connection.callLater(call, timeout: Self.registerTimeout)
        } catch {
            logger.notice("cannot register the advertisement monitor on \(adapter): \(error); repeats depend on the controller's duplicate filter")
        }
    }

    private func checkRegistration() {
        guard let pending = pendingRegistration, let result = pending.result() else { return }
        pendingRegistration = nil
        switch result {
        case .success:
            monitorRegistered = true
            logger.info("advertisement monitor \(monitor.root) registered on \(adapter): repeated advertisements are reported")
        case .failure(let error) where error.name == "org.bluez.Error.AlreadyExists":
            monitorRegistered = true
        case .failure(let error):
            logger.notice("BlueZ refused the advertisement monitor on \(adapter): \(error); an unchanged advertisement is repeated only if the controller's duplicate filter lets it through")
        }
    }

    /// Restarts discovery when nothing was heard for `silenceRestart`.
    private func checkSilence() {
        guard scanning, configuration.silenceRestart > 0, let connection, let adapterPath,
              now - lastActivity > configuration.silenceRestart else { return }
        lastActivity = now
        logger.limited(limiter: logLimiter, .info, "scanner.restart",
            "no BlueZ device updates for \(configuration.silenceRestart / 1_000_000) s: restarting discovery on \(adapter)")
        stopDiscovery(connection, adapterPath: adapterPath, timeout: configuration.callTimeout)
        do {
            try startDiscovery(connection, adapterPath: adapterPath)
        } catch let error as DBusCallError {
            scanning = false
            down(failure(error))
        } catch {
            scanning = false
            down(.malformed("\(error)"))
        }
    }

    private func stopDiscovery(_ connection: DBusConnection, adapterPath: String, timeout: Int32) {
        do {
            _ = try connection.call(
                try DBusMessage.methodCall(destination: Self.bluez, path: adapterPath, interface: Self.adapterInterface,
                                           member: "StopDiscovery", autoStart: false),
                timeout: timeout)
        } catch {
            logger.debug("StopDiscovery on \(adapterPath): \(error)")
        }
    }

    /// On shutdown: the monitor and the discovery session go (bluetoothd would also drop them
    /// when the connection closes).
    private func teardown(_ connection: DBusConnection) {
        guard let adapterPath else { return }
        if monitorRegistered || pendingRegistration != nil {
            do {
                _ = try connection.call(
                    try DBusMessage.methodCall(destination: Self.bluez, path: adapterPath,
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

    /// Reports `down` with the reason and the next retry; before the first start, without
    /// retries, records the reason as fatal instead.
    private func down(_ failure: ScannerFailure) {
        if !configuration.retriesMissingAdapter, !everUp {
            sink.scannerStateChanged(.down, detail: failure.text)
            fatal = BlueZScannerError(description: failure.text)
            return
        }
        let delay = backoff
        backoff = min(backoff * 2, configuration.maxBackoff)
        retryAt = now + delay
        let tenths = (delay + 50_000) / 100_000
        let seconds = tenths % 10 == 0 ? "\(tenths / 10)" : "\(tenths / 10).\(tenths % 10)"
        sink.scannerStateChanged(.down, detail: "\(failure.text); retrying in \(seconds) s")
    }

    // MARK: GetManagedObjects

    /// Finds our adapter in GetManagedObjects' reply (`a{oa{sa{sv}}}`), then learns the devices
    /// under it. Devices already present are not reported: their properties carry no time, and
    /// the next advertisement updates them.
    private func readManagedObjects(_ reply: DBusMessage) throws(DBusDecodingError) -> (path: String?, powered: Bool, hasMonitorManager: Bool) {
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

    // MARK: Signals

    /// The connection's message handler: monitor calls, then BlueZ's and the bus's signals.
    private func handle(_ message: OpaquePointer) -> Bool {
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
        do {
            if fromBlueZ, dbus_message_is_signal(message, "org.freedesktop.DBus.Properties", "PropertiesChanged") != 0 {
                try propertiesChanged(message)
            } else if fromBlueZ, dbus_message_is_signal(message, BlueZAdvertisementMonitor.objectManager, "InterfacesAdded") != 0 {
                try interfacesAdded(message)
            } else if fromBlueZ, dbus_message_is_signal(message, BlueZAdvertisementMonitor.objectManager, "InterfacesRemoved") != 0 {
                try interfacesRemoved(message)
            } else if strcmp(sender, "org.freedesktop.DBus") == 0,
                      dbus_message_is_signal(message, "org.freedesktop.DBus", "NameOwnerChanged") != 0 {
                try nameOwnerChanged(message)
            } else {
                return false
            }
        } catch {
            counters.malformedSignals.add(1, ordering: .relaxed)
            let member = dbus_message_get_member(message).map { String(cString: $0) } ?? "?"
            let path = dbus_message_get_path(message).map { String(cString: $0) } ?? "?"
            logger.limited(limiter: logLimiter, .debug, "bluez.malformed",
                "skipping a malformed \(TerminalText.logged(member)) signal from \(TerminalText.logged(path)): \(TerminalText.logged("\(error)"))")
        }
        return true
    }

    /// The device under our adapter that `path` names, if any.
    private func deviceKey(_ path: UnsafePointer<CChar>) -> BluetoothAddress? {
        guard !adapterPathC.isEmpty else { return nil }
        return BlueZDeviceProperties.deviceAddress(path: path, adapterPath: adapterPathC)
    }

    private func isOurAdapter(_ path: UnsafePointer<CChar>) -> Bool {
        if !adapterPathC.isEmpty { return strcmp(path, adapterPathC) == 0 }
        let length = strlen(path)
        let suffix = adapterSuffix.count - 1
        return length >= suffix && strcmp(path + (length - suffix), adapterSuffix) == 0
    }

    private func propertiesChanged(_ message: OpaquePointer) throws(DBusDecodingError) {
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
    private func adapterPropertiesChanged(_ message: OpaquePointer) throws(DBusDecodingError) {
        var reader = DBusMessageReader(message: message)
        guard try reader.string() == Self.adapterInterface,
              case .boolean(let powered)? = try reader.value()["Powered"]?.unwrapped else { return }
        if !powered, scanning {
            scanning = false
            down(.adapterOff(adapter))
        } else if powered, !scanning {
            retryAt = now
        }
    }

    private func interfacesAdded(_ message: OpaquePointer) throws(DBusDecodingError) {
        var reader = DBusMessageReader(message: message)
        var key: BluetoothAddress?
        var adapterAppeared = false
        try reader.withCString(.objectPath) { path in
            key = deviceKey(path)
            adapterAppeared = key == nil && isOurAdapter(path)
        }
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
    private func readDevice(_ reader: inout DBusMessageReader, key: BluetoothAddress, report: Bool) throws(DBusDecodingError) {
        var interfaces = try reader.enterArray(of: .dictEntry, expected: "a{sa{sv}}")
        while !interfaces.isAtEnd {
            var entry = try interfaces.enter(.dictEntry, expected: "{sa{sv}}")
            guard try entry.withCString(.string, { strcmp($0, Self.deviceInterface) == 0 }) else { continue }
            properties.reset()
            try properties.parse(&entry)
            deviceUpdated(key, report: report)
        }
    }

    private func deviceUpdated(_ key: BluetoothAddress, report: Bool) {
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

    private func noteSkipped(_ key: BluetoothAddress) {
        counters.skippedProperties.add(properties.skipped, ordering: .relaxed)
        guard let first = properties.firstSkipped else { return }
        let kind = first.name + " " + first.signature
        // Each odd (property, type) pair is logged once; a few dozen at most are remembered.
        guard loggedSkips.count < 32, loggedSkips.insert(kind).inserted else { return }
        logger.notice("skipping BlueZ property \(first.name) of unexpected type '\(first.signature)' (device \(key)); further ones are only counted")
    }

    private func deliverBurst() {
        guard unflushed > 0 else { return }
        unflushed = 0
        sink.flush()
    }

    private func interfacesRemoved(_ message: OpaquePointer) throws(DBusDecodingError) {
        var reader = DBusMessageReader(message: message)
        var key: BluetoothAddress?
        var isAdapter = false
        try reader.withCString(.objectPath) { path in
            key = deviceKey(path)
            isAdapter = key == nil && !adapterPathC.isEmpty && strcmp(path, adapterPathC) == 0
        }
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

    private func nameOwnerChanged(_ message: OpaquePointer) throws(DBusDecodingError) {
        var reader = DBusMessageReader(message: message)
        guard try reader.string() == Self.bluez else { return }
        _ = try reader.string()
        let newOwner = try reader.string()
        bluezOwner = newOwner.isEmpty ? [] : Array(newOwner.utf8CString)
        if newOwner.isEmpty {
            adapterGone(.bluetoothdLeft)
        } else {
            logger.limited(limiter: logLimiter, .info, "bluez.owner",
                "bluetoothd is on the system bus (\(TerminalText.logged(newOwner))): looking for \(adapter)")
            retryAt = now
        }
    }

    /// The adapter or bluetoothd went away: forget what BlueZ told us, report down, and wait
    /// for it to return (its signal makes the retry immediate).
    private func adapterGone(_ failure: ScannerFailure) {
        forgetAdapter()
        down(failure)
    }

    private func monitorEvent(_ event: BlueZAdvertisementMonitor.Event) {
        switch event {
        case .activated:
            logger.limited(limiter: logLimiter, .info, "bluez.monitor",
                           "BlueZ activated the advertisement monitor on \(adapter)")
        case .released:
            monitorRegistered = false
            logger.limited(limiter: logLimiter, .notice, "bluez.monitor",
                "BlueZ released the advertisement monitor on \(adapter): an unchanged advertisement is repeated only if the controller's duplicate filter lets it through")
        case .deviceFound(let path):
            logger.limited(limiter: logLimiter, .debug, "bluez.monitor",
                           "advertisement monitor: found \(TerminalText.logged(path))")
        case .deviceLost(let path):
            logger.limited(limiter: logLimiter, .debug, "bluez.monitor",
                           "advertisement monitor: lost \(TerminalText.logged(path))")
        }
    }

    private func logSummary() {
        logger.info("bluez scanner stopped: \(counters.updates.load(ordering: .relaxed)) device updates, \(counters.reports.load(ordering: .relaxed)) reports, \(counters.skippedProperties.load(ordering: .relaxed)) skipped properties, \(counters.evictions.load(ordering: .relaxed)) evicted devices")
    }
}
