import BLEPayload
import Glibc
import Logging
import Synchronization

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

    package let configuration: Configuration
    private let opener: Opener
    package let control: AdvertiserControl
    private let logger: Logger

    package init(
        configuration: Configuration, opener: Opener? = nil, logger: Logger,
        onState: @escaping @Sendable (AdvertiserState) -> Void = { _ in }
    ) throws(WakeSignal.Failure) {
        self.configuration = configuration
        self.opener = opener ?? HCIScannerBackend.rawSocketOpener(adapter: configuration.adapter)
        self.logger = logger
        control = try AdvertiserControl(logger: logger, onState: onState)
    }

    /// Runs until `stop()` or cancellation; returns when advertising is disabled. Throws a
    /// permanent failure before the adapter was ever up (no Bluetooth, no permission).
    package func run() async throws {
        try await BlockingThreadBridge.run(stop: control.stop) { [self] in
            if let error = lifecycle() { throw error }
        }
    }

    private var adapter: String { configuration.adapter }
    private var teardownTimeout: Int64 { min(configuration.commandTimeout, 500_000) }

    private func lifecycle() -> HCIScannerError? {
        control.lifecycle(
            adapter: adapter, retryInitial: configuration.retryInitial, retryMax: configuration.retryMax
        ) { (up) throws(HCIScannerError) in
            let transport = try opener()
            defer { transport.close() }
            let channel = HCICommandChannel(
                transport: transport, adapter: adapter, sink: DiscardingAdvertisementSink(), recorder: nil,
                counters: HCIScannerCounters(), wake: control.wake)
            let capabilities = try HCIScanSetup.capabilities(
                on: channel, timeout: configuration.commandTimeout, interruptible: false)
            let mode = HCIAdvertisingSetup.mode(
                leFeatures: capabilities.leFeatures, supportedCommands: capabilities.supportedCommands)
            logger.info("beacon transmitter on \(adapter): \(mode.rawValue) advertising commands")
            up()
            try serve(channel, mode: mode)
        }
    }

    /// Applies each new data until a stop (advertising disabled, then returns) or a failure.
    private func serve(_ channel: HCICommandChannel, mode: HCIAdvertisingMode) throws(HCIScannerError) {
        var applied: [UInt8]?
        var parametersSet = false
        // Whatever an earlier run of this transmitter left on: nothing is known about it.
        try HCIAdvertisingSetup.stop(on: channel, mode: mode, timeout: configuration.commandTimeout)
        control.report(.idle)
        while true {
            let (desired, stopping) = control.take()
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
                    control.countFrame()
                    control.report(.advertising(mode: mode.rawValue))
                } else {
                    try HCIAdvertisingSetup.stop(on: channel, mode: mode, timeout: configuration.commandTimeout)
                    control.report(.idle)
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
