import BLEPayload
import CBlueZ
import Foundation
import Logging

/// Why the scanner is down; each is retried.
enum BlueZScannerFailure: Sendable {
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
    /// bluetoothd dropped the transmitter's advertisement (it called Release).
    case advertisementReleased(String)

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
                + "(bluetooth.conf in /usr/share/dbus-1/system.d or /etc/dbus-1/system.d; "
                + "on Debian, join the bluetooth group) "
                + "(\(error.message))"
        case .callFailed(let error): "\(error)"
        case .malformed(let text): text
        case .advertisementReleased(let name): "bluetoothd released the advertisement on \(name)"
        }
    }
}

/// Everything the scanning thread owns. Created and used on that thread only.
final class BlueZScanLoop {
    static let bluez = "org.bluez"
    static let adapterInterface = "org.bluez.Adapter1"
    static let deviceInterface = "org.bluez.Device1"
    static let pollInterval: Int64 = 100_000
    static let teardownTimeout: Int32 = 1000
    static let registerTimeout: Int32 = 10_000
    /// What running without an advertisement monitor means, for the logs.
    static let withoutMonitor =
        "an unchanged advertisement is repeated only if the controller's duplicate filter "
        + "lets it through"

    let backend: BlueZScannerBackend
    let configuration: BlueZScannerConfiguration
    let sink: any AdvertisementSink
    let logger: Logger
    let logLimiter: LogRateLimiter
    let counters: BlueZScannerCounters
    let monitor: BlueZAdvertisementMonitor
    /// "/hci0", NUL-terminated: the suffix that names our adapter's object path.
    let adapterSuffix: [CChar]

    var backoff: Backoff
    var retryAt: Int64?
    var everUp = false
    var fatal: BlueZScannerError?

    // Per connection.
    var connection: DBusConnection?
    var lost = false
    /// The unique name owning org.bluez, NUL-terminated; BlueZ signals from anyone else are
    /// ignored, so a local process cannot inject devices. Empty when bluetoothd is not there.
    var bluezOwner: [CChar] = []
    var adapterPath: String?
    /// `adapterPath`, NUL-terminated, for allocation-free comparisons; empty when unknown.
    var adapterPathC: [CChar] = []
    var scanning = false
    var pendingRegistration: DBusPendingReply?
    var monitorRegistered = false
    /// bluetoothd activated the monitor (and has not released it): no discovery refresh needed.
    var monitorActive = false
    var monitorAbsence = BlueZMonitorAbsence.noManager
    /// When discovery is next restarted (monotonic µs); nil while no refresh is wanted.
    var nextRefresh: Int64?
    var lastActivity: Int64 = 0

    var tracker: BlueZDeviceTracker
    var properties = BlueZDeviceProperties()
    var reportBuffer: [UInt8] = []
    var unflushed = 0
    var loggedMonitorMissing = false
    var loggedRefresh = false
    var loggedSkips: Set<String> = []

    init(backend: BlueZScannerBackend) {
        self.backend = backend
        configuration = backend.configuration
        sink = backend.scanSink
        logger = backend.log
        logLimiter = backend.logLimiter
        counters = backend.counters
        monitor = BlueZAdvertisementMonitor(root: configuration.monitorRoot, companyID: configuration.companyID)
        adapterSuffix = Array(("/" + configuration.adapter).utf8CString)
        backoff = Backoff(floor: configuration.initialBackoff, cap: configuration.maxBackoff)
        tracker = BlueZDeviceTracker(capacity: configuration.maxDevices)
        reportBuffer.reserveCapacity(256)
    }

    var now: Int64 { MonotonicClock.micros() }
    var adapter: String { configuration.adapter }

    // MARK: Connection loop

    func run() throws {
        defer { logSummary() }
        while !backend.isStopping {
            if let retryAt { backend.waitForStop(until: retryAt) }
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

    func subscribe(_ connection: DBusConnection) throws(DBusCallError) {
        let bluez = "sender='\(Self.bluez)',type='signal'"
        try connection.addMatch("\(bluez),interface='org.freedesktop.DBus.ObjectManager',path='/'")
        try connection.addMatch("\(bluez),interface='org.freedesktop.DBus.Properties',member='PropertiesChanged'")
        try connection.addMatch(
            "sender='org.freedesktop.DBus',type='signal',interface='org.freedesktop.DBus',"
                + "member='NameOwnerChanged',arg0='\(Self.bluez)'")
    }

    /// Runs one connection until it is lost, the backend stops, or a start failure is fatal.
    func session(_ connection: DBusConnection) {
        retryAt = now
        while !backend.isStopping, fatal == nil {
            connection.dispatchAll()
            deliverBurst()
            if lost || !connection.isConnected { return }
            checkRegistration()
            checkSilence()
            checkRefresh()
            if let due = retryAt, now >= due {
                retryAt = nil
                start()
                continue
            }
            if connection.hasQueuedMessages { continue }
            let wait = min(Self.pollInterval, max(0, min(retryAt ?? .max, nextRefresh ?? .max) - now))
            if !connection.readWrite(timeout: Int32(max(1, wait / 1000))) {
                connection.dispatchAll()
                deliverBurst()
                lost = true
                return
            }
        }
    }

    func forgetConnection() {
        connection = nil
        bluezOwner = []
        forgetAdapter()
    }

    /// Forgets the adapter, its discovery and monitor, and the devices under it.
    func forgetAdapter() {
        pendingRegistration?.cancel()
        pendingRegistration = nil
        monitorRegistered = false
        monitorActive = false
        scanning = false
        nextRefresh = nil
        setAdapter(nil)
        tracker.removeAll()
    }

    func setAdapter(_ path: String?) {
        adapterPath = path
        adapterPathC = path.map { Array($0.utf8CString) } ?? []
    }

    /// Reports `down` with the reason and the next retry; before the first start, without
    /// retries, records the reason as fatal instead.
    func down(_ failure: BlueZScannerFailure) {
        if !configuration.retriesMissingAdapter, !everUp {
            sink.scannerStateChanged(.down, detail: failure.text)
            fatal = BlueZScannerError(description: failure.text)
            return
        }
        let delay = backoff.failed()
        retryAt = now + delay
        let tenths = (delay + 50_000) / 100_000
        let seconds = tenths % 10 == 0 ? "\(tenths / 10)" : "\(tenths / 10).\(tenths % 10)"
        sink.scannerStateChanged(.down, detail: "\(failure.text); retrying in \(seconds) s")
    }

    func logSummary() {
        let updates = counters.updates.load(ordering: .relaxed)
        let reports = counters.reports.load(ordering: .relaxed)
        let skipped = counters.skippedProperties.load(ordering: .relaxed)
        let evicted = counters.evictions.load(ordering: .relaxed)
        let summary =
            "bluez scanner stopped: \(updates) device updates, \(reports) reports, "
            + "\(skipped) skipped properties, \(evicted) evicted devices"
        logger.info("\(summary)")
    }
}
