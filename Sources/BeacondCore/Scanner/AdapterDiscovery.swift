import CBlueZ
import Glibc
import Logging
import ServiceLifecycle
import Synchronization

/// `scanner.adapter: auto`: finds the adapters the kernel has, at start and whenever one appears.
///
/// One thread lists the adapters (HCIGETDEVLIST), then waits on the kernel's device notices (a
/// raw HCI socket bound to no adapter: an adapter registered or brought up wakes it at once) and
/// lists them again, at least every `interval`: the notices need CAP_NET_RAW and Bluetooth in the
/// kernel, which may load after the daemon starts. Each adapter not seen before is handed to
/// `found`, once, on that thread; at most `limit` are.
package final class AdapterDiscovery: Sendable {
    package typealias Lister = @Sendable () -> [String]

    private let list: Lister
    private let interval: Int64
    private let limit: Int
    private let opensNotices: Bool
    private let wake: WakeSignal
    private let stopping = Atomic<Bool>(false)

    /// - Parameters:
    ///   - list: the adapters' names now; by default the kernel's.
    ///   - opensNotices: wait on the kernel's device notices (false in tests).
    package convenience init(
        interval: Int64 = 1_000_000, limit: Int = ScannerAdapters.maxCount, opensNotices: Bool = true,
        list: Lister? = nil
    ) throws(WakeSignal.Failure) {
        // Made before the object, as in BlueZScannerBackend: no throw with `stopping` initialized.
        let wake = try WakeSignal()
        self.init(
            interval: interval, limit: limit, opensNotices: opensNotices,
            list: list ?? { HCIRawSocket.knownAdapters() }, wake: wake)
    }

    private init(interval: Int64, limit: Int, opensNotices: Bool, list: @escaping Lister, wake: WakeSignal) {
        self.interval = max(1000, interval)
        self.limit = limit
        self.opensNotices = opensNotices
        self.list = list
        self.wake = wake
    }

    /// Runs the thread until `stop()`, a graceful shutdown or cancellation.
    package func run(found: @escaping @Sendable (String) -> Void) async throws {
        try await BlockingThreadBridge.run(stop: stop) { [self] in watch(found: found) }
    }

    package func stop() {
        stopping.store(true, ordering: .relaxed)
        wake.signal()
    }

    private func watch(found: (String) -> Void) {
        var known = Set<String>()
        var notices: Int32 = -1
        defer { if notices >= 0 { Glibc.close(notices) } }
        while !stopping.load(ordering: .relaxed) {
            for name in list() where !known.contains(name) && known.count < limit {
                known.insert(name)
                found(name)
            }
            if notices < 0, opensNotices { notices = beacond_hci_open_device_events() }
            if !waitForNotice(on: notices) {
                Glibc.close(notices)
                notices = -1
            }
        }
    }

    /// Waits for a device notice, a stop or `interval`, and empties the notice socket: what the
    /// notice said does not matter, the next listing does. False when the socket failed (it is
    /// opened again next time).
    private func waitForNotice(on notices: Int32) -> Bool {
        var descriptors = [
            pollfd(fd: wake.descriptor, events: Int16(POLLIN), revents: 0),
            pollfd(fd: notices, events: Int16(POLLIN), revents: 0),
        ]
        _ = poll(&descriptors, notices >= 0 ? 2 : 1, Int32(clamping: interval / 1000))
        if descriptors[0].revents != 0, !stopping.load(ordering: .relaxed) { wake.drain() }
        guard notices >= 0, descriptors[1].revents != 0 else { return true }
        if descriptors[1].revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 { return false }
        var buffer = [UInt8](repeating: 0, count: 260)
        while buffer.withUnsafeMutableBytes({ recv(notices, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }) > 0 {}
        return true
    }
}
