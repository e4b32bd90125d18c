import BLEPayload
import Glibc
import Logging
import Synchronization

/// What an advertiser backend is doing, for the transmitter's state.
package enum AdvertiserState: Hashable, Sendable {
    /// Opening the adapter for the first time.
    case starting
    /// Advertising the data it was given, with this command set.
    case advertising(mode: String)
    /// Up, with nothing to advertise (advertising disabled).
    case idle
    /// The adapter is missing or failed; retrying.
    case down(reason: String)
    case stopped
}

/// The transmitter's `hci` backend: a raw HCI socket of its own on one thread, so it can share
/// the adapter with the daemon's scanner. Each change of data disables advertising, sets the data
/// and enables it again (`HCIAdvertisingSetup.advertise`); nil data disables it. On adapter loss it
/// reopens with back-off, as the scanner does, and advertises the latest data again. A stop
/// disables advertising and sends nothing more.
package final class HCIAdvertiser: Sendable {
    package struct Configuration: Hashable, Sendable {
        package var adapter: String
        /// Advertising interval, µs (100 ms by default).
        package var interval: Int64 = 100_000
        package var commandTimeout: Int64 = 2_000_000
        package var retryInitial: Int64 = 500_000
        package var retryMax: Int64 = 10_000_000

        package init(adapter: String) {
            self.adapter = adapter
        }
    }

    package typealias Opener = HCIScannerBackend.Opener

    private struct Shared {
        var desired: [UInt8]?
        var stopping = false
        var state = AdvertiserState.starting
        var frames = 0
        var restarts = 0
    }

    package let configuration: Configuration
    private let opener: Opener
    private let onState: @Sendable (AdvertiserState) -> Void
    /// Wakes the thread for new data or a stop.
    private let wake: WakeSignal
    private let shared = Mutex(Shared())
    private let logger: Logger

    package init(
        configuration: Configuration, opener: Opener? = nil, logger: Logger,
        onState: @escaping @Sendable (AdvertiserState) -> Void = { _ in }
    ) throws(WakeSignal.Failure) {
        self.configuration = configuration
        self.opener = opener ?? HCIScannerBackend.rawSocketOpener(adapter: configuration.adapter)
        self.onState = onState
        self.logger = logger
        wake = try WakeSignal()
    }

    /// Advertising data to send (a complete AD payload), or nil to stop advertising.
    package func set(_ data: [UInt8]?) {
        let changed = shared.withLock { shared in
            defer { shared.desired = data }
            return shared.desired != data
        }
        if changed { wake.signal() }
    }

    package var state: AdvertiserState { shared.withLock { $0.state } }
    /// Frames handed to the controller (each change of data once).
    package var frames: Int { shared.withLock { $0.frames } }
    /// Times the adapter was reopened after it was lost.
    package var restarts: Int { shared.withLock { $0.restarts } }

    /// Runs until `stop()` or cancellation; returns when advertising is disabled. Throws a
    /// permanent failure before the adapter was ever up (no Bluetooth, no permission).
    package func run() async throws {
        try await BlockingThreadBridge.run(stop: stop) { [self] in
            if let error = lifecycle() { throw error }
        }
    }

    package func stop() {
        shared.withLock { $0.stopping = true }
        wake.signal()
    }

    private var isStopping: Bool { shared.withLock { $0.stopping } }

    private func report(_ state: AdvertiserState) {
        let changed = shared.withLock { shared in
            defer { shared.state = state }
            return shared.state != state
        }
        if changed { onState(state) }
    }

    private var adapter: String { configuration.adapter }
    private var teardownTimeout: Int64 { min(configuration.commandTimeout, 500_000) }

    private func lifecycle() -> HCIScannerError? {
        var backoff = Backoff(floor: configuration.retryInitial, cap: configuration.retryMax)
        var everUp = false
        // A failure that repeats the last one is logged at debug level only, as the scanner does.
        var lastWarning: String?
        while !isStopping {
            do throws(HCIScannerError) {
                let transport = try opener()
                defer { transport.close() }
                let channel = HCICommandChannel(
                    transport: transport, adapter: adapter, sink: DiscardingAdvertisementSink(), recorder: nil,
                    counters: HCIScannerCounters(), wake: wake)
                let capabilities = try HCIScanSetup.capabilities(
                    on: channel, timeout: configuration.commandTimeout, interruptible: false)
                let mode = HCIAdvertisingSetup.mode(
                    leFeatures: capabilities.leFeatures, supportedCommands: capabilities.supportedCommands)
                logger.info("beacon transmitter on \(adapter): \(mode.rawValue) advertising commands")
                if everUp { shared.withLock { $0.restarts += 1 } }
                everUp = true
                backoff.succeeded()
                lastWarning = nil
                try serve(channel, mode: mode)
                report(.stopped)
                return nil
            } catch {
                if !everUp, error.isPermanent {
                    report(.down(reason: error.description))
                    return error
                }
                let delay = backoff.failed()
                let reason = "\(error); retrying in \(DecimalText.format(micros: delay)) s"
                let level: Logger.Level = error.description == lastWarning ? .debug : .warning
                logger.log(level: level, "beacon transmitter on \(adapter): \(TerminalText.logged(reason))")
                lastWarning = error.description
                report(.down(reason: reason))
                if waitOut(delay) { break }
            }
        }
        report(.stopped)
        return nil
    }

    /// Waits `micros` for a stop; true when one came. New data meanwhile waits for the adapter.
    private func waitOut(_ micros: Int64) -> Bool {
        let deadline = MonotonicClock.micros() &+ micros
        while true {
            let remaining = deadline - MonotonicClock.micros()
            guard remaining > 0 else { return false }
            if wake.wait(micros: remaining) {
                wake.drain()
                if isStopping { return true }
            }
        }
    }

    /// Applies each new data until a stop (advertising disabled, then returns) or a failure.
    private func serve(_ channel: HCICommandChannel, mode: HCIAdvertisingMode) throws(HCIScannerError) {
        var applied: [UInt8]?
        var parametersSet = false
        // Whatever an earlier run of this transmitter left on: nothing is known about it.
        try HCIAdvertisingSetup.stop(on: channel, mode: mode, timeout: configuration.commandTimeout)
        report(.idle)
        while true {
            wake.drain()
            let (desired, stopping) = shared.withLock { ($0.desired, $0.stopping) }
            if stopping {
                if applied != nil {
                    do throws(HCIScannerError) {
                        try HCIAdvertisingSetup.stop(on: channel, mode: mode, timeout: teardownTimeout)
                    } catch {
                        logger.warning("could not disable advertising on \(adapter) while stopping: \(error)")
                    }
                }
                return
            }
            if desired != applied {
                if let desired {
                    try HCIAdvertisingSetup.advertise(
                        desired, on: channel, mode: mode, interval: configuration.interval,
                        parameters: !parametersSet, timeout: configuration.commandTimeout)
                    parametersSet = true
                    shared.withLock { $0.frames += 1 }
                    report(.advertising(mode: mode.rawValue))
                } else {
                    try HCIAdvertisingSetup.stop(on: channel, mode: mode, timeout: configuration.commandTimeout)
                    report(.idle)
                }
                applied = desired
            }
            do throws(HCIScannerError) {
                if case .ready(let revents) = try channel.wait(for: Int16(POLLIN), micros: nil, interruptible: true) {
                    switch channel.readBurst() {
                    case .lost(let reason):
                        throw .adapterGone(adapter: adapter, reason: reason)
                    case .drained(let packets):
                        if packets == 0, revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 {
                            throw .adapterGone(adapter: adapter, reason: "its socket reported an error")
                        }
                    }
                }
            } catch .shuttingDown {
                continue
            }
        }
    }
}

/// The advertiser's socket hears every advertising report too: they are not its business.
private final class DiscardingAdvertisementSink: AdvertisementSink {
    func receive(_ report: AdvertisingReport, bootMicros: Int64) {}
    func flush() {}
    func scannerStateChanged(_ state: ScannerStatus.State, detail: String?) {}
}
