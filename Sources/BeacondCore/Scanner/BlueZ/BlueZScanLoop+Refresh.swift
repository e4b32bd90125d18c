import Foundation
import Logging

/// The discovery refresh: while no advertisement monitor is active, discovery is restarted every
/// `refreshInterval` (`scanner.bluez_refresh_s`).
///
/// Why: without an active monitor the kernel asks the controller to filter duplicates at every
/// scan start (hci_sync.c), and a real controller then reports an unchanged advertisement about
/// once per scan. bluetoothd restarts its scan only about every 10 s, so a beacon repeating a
/// TTL-10 frame could lapse while it is still on air. StopDiscovery and StartDiscovery make the
/// kernel start a new scan, which resets the controller's filter. bluetoothd forgets a client's
/// discovery filter with its session, so each restart sets it again before StartDiscovery.
///
/// BlueZ creates AdvertisementMonitorManager1 only with experimental features on (bluetoothd
/// `-E`, or `Experimental = true` in main.conf), so without them this is the normal case. With
/// them, the monitor is activated (bluetoothd calls `Activate`) within moments of the start and
/// no restart happens; `Release` brings the restarts back.
extension BlueZScanLoop {
    /// Sets the next restart: a period from now while scanning without an active monitor, else none.
    func scheduleRefresh() {
        let interval = configuration.refreshInterval
        nextRefresh = scanning && !monitorActive && interval > 0 ? now + interval : nil
    }

    /// Restarts discovery when it is due.
    func checkRefresh() {
        guard let due = nextRefresh, now >= due else { return }
        guard scanning, !monitorActive, let connection, let adapterPath else {
            nextRefresh = nil
            return
        }
        if !loggedRefresh { logRefresh() }
        refreshDiscovery(connection, adapterPath: adapterPath)
    }

    /// StopDiscovery, then the filter and StartDiscovery. A failed stop is counted and logged, and
    /// discovery is still (re)started, since bluetoothd may have dropped the session on its own;
    /// a failed start reports the scanner `down` and the usual retry starts it again.
    func refreshDiscovery(_ connection: DBusConnection, adapterPath: String) {
        var stopped = true
        do {
            try callStopDiscovery(connection, adapterPath: adapterPath, timeout: configuration.callTimeout)
        } catch {
            stopped = false
            counters.refreshFailures.add(1, ordering: .relaxed)
            logger.limited(
                limiter: logLimiter, .notice, "bluez.refresh",
                "discovery restart on \(adapter): StopDiscovery failed (\(error)); starting discovery anyway")
        }
        do {
            try startDiscovery(connection, adapterPath: adapterPath)
        } catch {
            if stopped { counters.refreshFailures.add(1, ordering: .relaxed) }
            scanning = false
            nextRefresh = nil
            logger.limited(
                limiter: logLimiter, .notice, "bluez.refresh",
                "discovery restart on \(adapter): StartDiscovery failed (\(error)); retrying")
            if let error = error as? DBusCallError { down(failure(error)) } else { down(.malformed("\(error)")) }
            return
        }
        if stopped { counters.refreshes.add(1, ordering: .relaxed) }
        scheduleRefresh()
    }

    /// Why discovery is restarted, once per backend: why no monitor is active, what that means,
    /// and (when BlueZ has no monitor manager) how to get one.
    func logRefresh() {
        loggedRefresh = true
        let period = DecimalText.format(micros: configuration.refreshInterval)
        let hint =
            monitorAbsence == .noManager
            ? "; BlueZ offers the monitor only with its experimental features on "
                + "(Experimental = true in /etc/bluetooth/main.conf, or bluetoothd -E)"
            : ""
        let text =
            "restarting discovery on \(adapter) every \(period) s (scanner.bluez_refresh_s) because "
            + "\(monitorAbsence.text): without an active advertisement monitor \(Self.withoutMonitor), "
            + "and many controllers let it through once per scan, so a beacon's override could lapse "
            + "while it is still on air\(hint)"
        logger.notice("\(text)")
    }
}

/// Why no advertisement monitor is active, for the refresh's log line.
enum BlueZMonitorAbsence {
    case noManager
    case notActivated
    case notRegistered
    case refused
    case released

    var text: String {
        switch self {
        case .noManager: "BlueZ offers no advertisement monitor manager (AdvertisementMonitorManager1)"
        case .notActivated: "BlueZ has not activated the advertisement monitor"
        case .notRegistered: "the advertisement monitor could not be registered"
        case .refused: "BlueZ refused the advertisement monitor"
        case .released: "BlueZ released the advertisement monitor"
        }
    }
}
