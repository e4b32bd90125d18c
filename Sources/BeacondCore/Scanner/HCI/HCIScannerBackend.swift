import Glibc
import Logging
import ServiceLifecycle
import Synchronization

/// `--backend hci`: scans on a raw HCI socket and feeds a sink.
///
/// Everything runs on one dedicated thread: opening the adapter, the setup commands, the read
/// loop (poll on the socket and a wake eventfd), the silence watchdog and the retries. Graceful
/// shutdown or cancellation signals the eventfd; the thread disables the scan, closes the
/// socket and ends, and `run()` returns.
///
/// Failures: a permanent error before the scanner first came up (missing capabilities, a bad
/// configuration) makes `run()` throw, and so does any start error when `retriesMissingAdapter`
/// is false. Everything else (no Bluetooth in the kernel yet, a missing or downed adapter, one
/// that disappears, a command that fails or times out) sets the state `down` with the reason,
/// closes the socket and retries with a doubling delay until the adapter is back.
// @unchecked Sendable: the reader thread owns the socket; other threads use its Mutex'd state and wake signal.
package final class HCIScannerBackend: Service, @unchecked Sendable {
    package typealias Opener = @Sendable () throws(HCIScannerError) -> any HCITransport

    let configuration: HCIScannerConfiguration
    package let counters = HCIScannerCounters()
    let recorder: BTSnoopRecorder?
    /// The daemon's kernel filter (`scanner.kernel_filter`); nil: every report is read.
    let kernelFilter: HCIKernelFilter?
    package let filterCounters = HCIKernelFilterCounters()
    /// Signalled when a client begins looking at every device, so the reader lifts the filter
    /// at once; nil without a filter (or when no eventfd could be made: it then lifts it at its
    /// next wake-up).
    private let filterNudge: WakeSignal?
    private let sink: any AdvertisementSink
    private let logger: Logger
    private let logLimiter: LogRateLimiter
    private let opener: Opener
    private let wake: WakeSignal
    private let shared = Mutex(Shared())

    private struct Shared {
        var started = false
        var mode: HCIScanMode?
        var thread: pthread_t?
    }

    /// - Parameter opener: opens the transport; by default the adapter's raw HCI socket.
    package init(
        configuration: HCIScannerConfiguration, sink: any AdvertisementSink, recorder: BTSnoopRecorder? = nil,
        kernelFilter: HCIKernelFilter? = nil, logger: Logger, logLimiter: LogRateLimiter = LogRateLimiter(),
        opener: Opener? = nil
    )
        throws(HCIScannerError)
    {
        self.logLimiter = logLimiter
        try configuration.validate()
        self.configuration = configuration
        self.sink = sink
        self.recorder = recorder
        self.kernelFilter = kernelFilter
        filterNudge = kernelFilter != nil ? try? WakeSignal() : nil
        self.logger = logger
        self.opener = opener ?? Self.rawSocketOpener(adapter: configuration.adapter)
        do {
            wake = try WakeSignal()
        } catch {
            throw .system(adapter: "", operation: "create the scanner's wake eventfd", errno: error.errno)
        }
    }

    /// Opens `adapter`'s raw HCI socket.
    static func rawSocketOpener(adapter: String) -> Opener {
        { () throws(HCIScannerError) -> any HCITransport in try HCIRawSocket.open(adapter: adapter) }
    }

    /// The command set in use while the scanner is up.
    package var mode: HCIScanMode? { shared.withLock { $0.mode } }

    /// The reader thread, once started (tests signal it; the benchmark reads its CPU clock).
    package var readerThread: pthread_t? { shared.withLock { $0.thread } }

    package func run() async throws {
        try await BlockingThreadBridge.awaitEnd(stop: stop) { finished in
            start { error in finished(error.map { Result<Void, any Error>.failure($0) } ?? .success(())) }
        }
    }

    /// Starts the reader thread once; `completion` runs on it at the end, with the error that
    /// ended it or nil after `stop()`.
    package func start(completion: @escaping @Sendable (HCIScannerError?) -> Void) {
        // Spawned under the lock, so `readerThread` is set by the time `start` returns.
        shared.withLock { state in
            guard !state.started else { return completion(nil) }
            state.started = true
            do throws(PosixThread.StartError) {
                state.thread = try BlockingThreadBridge.detach { [self] in completion(lifecycle()) }
            } catch {
                completion(.system(adapter: "", operation: "start the reader thread", errno: error.code))
            }
        }
    }

    /// Asks the reader thread to disable the scan and end; returns at once.
    package func stop() { wake.signal() }

    /// The backend's counters for a status reply (`status.hci`).
    var hciStatus: HCIBackendStatus {
        let snapshot = counters.snapshot
        var status = HCIBackendStatus(adapter: configuration.adapter, mode: mode?.rawValue)
        status.events = snapshot.events
        status.reports = snapshot.reports
        status.malformed = snapshot.malformed
        status.lastMalformed = counters.lastMalformed
        status.restarts = snapshot.restarts
        status.reconnects = snapshot.reconnects
        status.recording = recorder?.recordingStatus
        if kernelFilter != nil {
            status.kernelFilter = KernelFilterStatus(
                state: filterCounters.current.name, probes: filterCounters.probes.load(ordering: .relaxed),
                lifts: filterCounters.lifts.load(ordering: .relaxed), failure: filterCounters.failure)
        }
        return status
    }

    // MARK: The reader thread

    private var adapter: String { configuration.adapter }
    /// Disabling the scan at the end must not hold shutdown up for long.
    private var teardownTimeout: Int64 { min(configuration.commandTimeout, 500_000) }

    private enum ScanEnd {
        case stopped
        case lost(HCIScannerError)
    }

    private func lifecycle() -> HCIScannerError? {
        if let kernelFilter, let filterNudge { kernelFilter.demand.addListener(filterNudge) }
        defer {
            shared.withLock { $0.mode = nil }
            recorder?.close()
            if let kernelFilter, let filterNudge { kernelFilter.demand.removeListener(filterNudge) }
        }
        var backoff = Backoff(floor: configuration.retryInitial, cap: configuration.retryMax)
        var everUp = false
        var lastWarning: String?
        retrying: while !wake.isSignalled {
            let channel: HCICommandChannel
            let capabilities: HCIScanSetup.Capabilities
            do {
                (channel, capabilities) = try openAndStart()
            } catch .shuttingDown {
                break retrying
            } catch {
                if !everUp, error.isPermanent || !configuration.retriesMissingAdapter {
                    sink.scannerStateChanged(.down, detail: error.description)
                    return error
                }
                if waitBeforeRetry(after: error, backoff: &backoff, lastWarning: &lastWarning) { break retrying }
                continue retrying
            }
            if everUp { counters.reconnects.add(1, ordering: .relaxed) }
            everUp = true
            backoff.succeeded()
            lastWarning = nil
            cameUp(capabilities)
            var mode = capabilities.mode
            switch scan(channel, mode: &mode) {
            case .stopped:
                do {
                    try HCIScanSetup.stop(on: channel, mode: mode, timeout: teardownTimeout)
                } catch {
                    logger.warning("could not disable the scan on \(adapter) while stopping: \(error)")
                }
                channel.transport.close()
                sink.scannerStateChanged(.none, detail: "stopped")
                logger.info("scanner on \(adapter) stopped")
                return nil
            case .lost(let error):
                shared.withLock { $0.mode = nil }
                if case .adapterGone = error {
                } else {
                    try? HCIScanSetup.stop(on: channel, mode: mode, timeout: teardownTimeout)
                }
                channel.transport.close()
                if waitBeforeRetry(after: error, backoff: &backoff, lastWarning: &lastWarning) { break retrying }
            }
        }
        sink.scannerStateChanged(.none, detail: "stopped")
        return nil
    }

    /// Opens the transport and runs the setup; on failure closes the transport again.
    private func openAndStart() throws(HCIScannerError) -> (HCICommandChannel, HCIScanSetup.Capabilities) {
        let transport = try opener()
        let channel = HCICommandChannel(
            transport: transport, adapter: adapter, sink: sink, recorder: recorder,
            counters: counters, wake: wake)
        var mode: HCIScanMode?
        do {
            let capabilities = try HCIScanSetup.capabilities(on: channel, timeout: configuration.commandTimeout)
            mode = capabilities.mode
            try HCIScanSetup.startScan(on: channel, mode: capabilities.mode, configuration: configuration)
            return (channel, capabilities)
        } catch {
            if case .shuttingDown = error, let mode {
                // Shutdown came while a setup command was in flight: it may have been the enable.
                try? HCIScanSetup.stop(on: channel, mode: mode, timeout: teardownTimeout)
            }
            transport.close()
            throw error
        }
    }

    private func cameUp(_ capabilities: HCIScanSetup.Capabilities) {
        let mode = capabilities.mode
        let previous = shared.withLock { state in
            defer { state.mode = mode }
            return state.mode
        }
        let kind = configuration.active ? "active" : "passive"
        sink.scannerStateChanged(.up, detail: "scanning on \(adapter) (\(mode.rawValue), \(kind))")
        if previous != mode {
            logger.info(
                """
                scanning on \(adapter): \(mode.rawValue) scan commands (\(capabilities.reason)), \(kind), \
                duplicate filtering off
                """
            )
        }
    }

    /// Reads until shutdown or a failure; restarts the scan when it has been silent too long.
    ///
    /// With the kernel filter on, silence may only mean that no GeoRacing beacon is near: the
    /// watchdog then lifts the filter for a probe, and restarts the scan only when the probe
    /// hears no device at all either.
    private func scan(_ channel: HCICommandChannel, mode: inout HCIScanMode) -> ScanEnd {
        let silence = configuration.silenceRestart
        var filter = HCIKernelFilterSwitch(filter: kernelFilter, counters: filterCounters, recording: recorder != nil)
        defer { filterCounters.set(.off) }
        while true {
            let now = MonotonicClock.bootMicros()
            if let refusal = filter.update(on: channel.transport, at: now) {
                logger.warning("scanner on \(adapter): \(refusal); reading every report")
            }
            var timeout: Int64?
            if let probe = filter.probe {
                timeout = max(0, probe.end - now)
            } else if silence > 0 {
                timeout = max(0, channel.lastReportBoot + silence - now)
            }
            if recorder != nil {
                timeout = min(timeout ?? BTSnoopRecorder.flushInterval, BTSnoopRecorder.flushInterval)
            }
            do {
                if case .ready(let revents) = try channel.wait(
                    for: Int16(POLLIN), micros: timeout, interruptible: true, nudge: filterNudge)
                {
                    switch channel.readBurst() {
                    case .lost(let reason):
                        return .lost(.adapterGone(adapter: adapter, reason: reason))
                    case .drained(let packets):
                        if packets == 0, revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 {
                            return .lost(.adapterGone(adapter: adapter, reason: "its socket reported an error"))
                        }
                        if packets > 0, configuration.burstPause > 0, wake.wait(micros: configuration.burstPause) {
                            return .stopped
                        }
                    }
                }
                recorder?.flushIfDue()
                filter.heard(at: channel.lastReportBoot)
                let after = MonotonicClock.bootMicros()
                if silence > 0, after - channel.lastReportBoot >= silence, !filter.silenceElapsed(at: after) {
                    let restarts = counters.restarts.add(1, ordering: .relaxed).newValue
                    logger.limited(
                        limiter: logLimiter, .warning, "scanner.restart",
                        """
                        no advertising report on \(adapter) for \(DecimalText.format(micros: silence)) s; \
                        restarting the scan (restart \(restarts))
                        """
                    )
                    mode = try HCIScanSetup.start(on: channel, configuration: configuration).mode
                }
            } catch .shuttingDown {
                return .stopped
            } catch {
                return .lost(error)
            }
        }
    }

    /// Reports the failure (state `down`, and a warning unless it repeats the last one), then
    /// waits the backoff's next delay. True when shutdown was requested meanwhile.
    private func waitBeforeRetry(after error: HCIScannerError, backoff: inout Backoff, lastWarning: inout String?)
        -> Bool
    {
        recorder?.flush()
        let delay = backoff.failed()
        let message = error.description
        let detail = "\(message); retrying in \(DecimalText.format(micros: delay)) s"
        sink.scannerStateChanged(.down, detail: detail)
        if message != lastWarning {
            logger.limited(
                limiter: logLimiter, .warning, "scanner.down",
                "scanner down: \(TerminalText.logged(detail))")
            lastWarning = message
        } else {
            logger.limited(
                limiter: logLimiter, .debug, "scanner.down",
                "scanner still down: \(TerminalText.logged(detail))")
        }
        return wake.wait(micros: delay) { counters.interruptions.add(1, ordering: .relaxed) }
    }
}
