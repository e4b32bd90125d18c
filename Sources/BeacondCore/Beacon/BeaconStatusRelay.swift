import Synchronization

/// Tells one listener the transmitter's status each time it changes: its plan (mode, sequence,
/// temperature), the radio's state or its counts. The heartbeat's counts are left out, so a
/// heartbeat every 10 s is not a change. `refresh()` may be called from any thread (the radio's
/// thread on a state change, the caller of `update`); the listener runs on that thread.
package final class BeaconStatusRelay: Sendable {
    private struct Shared {
        var transmitter: BeaconTransmitter?
        var listener: (@Sendable (BeaconStatus) -> Void)?
        var last: BeaconStatus?
    }

    private let shared = Mutex(Shared())

    package init() {}

    /// The transmitter to watch; made after its radio, whose state changes call `refresh()`.
    package func watch(_ transmitter: BeaconTransmitter) { shared.withLock { $0.transmitter = transmitter } }

    /// Tells `listener` the status now, then at each change.
    package func listen(_ listener: @escaping @Sendable (BeaconStatus) -> Void) {
        shared.withLock {
            $0.listener = listener
            $0.last = nil
        }
        refresh()
    }

    package func refresh() {
        guard let transmitter = shared.withLock({ $0.transmitter }) else { return }
        var status = transmitter.status
        status.heartbeat = nil
        let listener = shared.withLock { shared -> (@Sendable (BeaconStatus) -> Void)? in
            guard shared.last != status else { return nil }
            shared.last = status
            return shared.listener
        }
        listener?(status)
    }
}
