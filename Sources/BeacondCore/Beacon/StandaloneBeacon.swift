import CircuitState
import Glibc
import Logging
import Synchronization
import UnixSignals

/// `beacond beacon`: a transmitter alone, for a marshal post's laptop or a box that only
/// advertises. It follows one source: a hand-set mode (SIGHUP re-reads `--mode-file`), race
/// control itself, or a daemon's race-control state. Its state goes to stderr, one line per change.
package enum StandaloneBeacon {
    package enum Source: Sendable {
        /// `--mode` and/or `--mode-file` (the file, when given, wins and is re-read on SIGHUP).
        case handSet(TrackMode?, modeFile: String?)
        case remote(url: String, caFile: String?, pollInterval: Duration, staleAfter: Duration)
        case socket(String)
    }

    /// Exit status 0 after SIGTERM or SIGINT; 1 when the radio cannot be used at all (no
    /// Bluetooth, no permission) or race control's settings are refused.
    package static func run(
        transmitter configuration: BeaconTransmitter.Configuration, radio: BeaconRadio,
        source: Source, heartbeat: BeaconHeartbeat.Configuration?, logger: Logger
    ) async -> Int32 {
        let signals = await UnixSignalsSequence(trapping: .sigterm, .sigint, .sighup)
        let relay = BeaconStatusRelay()
        let advertiser: any BeaconAdvertiserBackend
        do throws(WakeSignal.Failure) {
            advertiser = try radio.makeAdvertiser(logger: logger) { _ in relay.refresh() }
        } catch {
            printError("beacond beacon: cannot make a wake signal: \(errnoText(error.errno))")
            return 1
        }
        let transmitter = BeaconTransmitter(configuration: configuration, backend: advertiser, logger: logger)
        relay.watch(transmitter)
        let lastLine = Mutex<String?>(nil)
        relay.listen { status in
            let line = status.line
            let changed = lastLine.withLock { last in
                defer { last = line }
                return last != line
            }
            if changed { printError(line) }
        }
        @Sendable func update(_ input: BeaconInput) {
            transmitter.update(input)
            relay.refresh()
        }

        var background: [Task<Void, Never>] = []
        if let heartbeat {
            do {
                let sender = try BeaconHeartbeat(configuration: heartbeat, transmitter: transmitter, logger: logger)
                background.append(Task { await sender.run() })
            } catch {
                printError("beacond beacon: --heartbeat-url: \(error)")
                return 1
            }
        }
        var feed: TrackStateFeed?
        switch source {
        case .handSet(let mode, let modeFile):
            update(handSetInput(mode, modeFile: modeFile))
        case .socket(let path):
            let follower = TrackStateFeed(configuration: .init(path: path)) { update(BeaconDaemonFollower.input($0)) }
            do throws(PosixThread.StartError) { try follower.start() } catch {
                printError("beacond beacon: \(error)")
                return 1
            }
            feed = follower
        case .remote(let url, let caFile, let pollInterval, let staleAfter):
            let follower = BeaconRemoteFollower(
                staleAfter: PreparedRemote.nanoseconds(staleAfter) / 1_000, update: update)
            let poller: RemoteStatePoller
            do {
                poller = try RemoteStatePoller(
                    configuration: RemotePollerConfiguration(
                        url: url, pollInterval: pollInterval, staleAfter: staleAfter, caFile: caFile),
                    sink: follower, logger: logger)
            } catch {
                printError("beacond beacon: \(error)")
                return 1
            }
            update(follower.input)
            background.append(Task { try? await poller.run() })
            background.append(Task { await follower.watchStaleness() })
        }
        defer {
            feed?.stop()
            for task in background { task.cancel() }
        }
        let signalTask = Task {
            for await signal in signals {
                if signal == .sighup, case .handSet(let mode, let modeFile) = source {
                    update(handSetInput(mode, modeFile: modeFile))
                    continue
                }
                if signal != .sighup { break }
            }
            transmitter.stop()
        }
        defer { signalTask.cancel() }
        do {
            try await transmitter.run()
        } catch {
            relay.refresh()
            printError("beacond beacon: \(error)")
            return 1
        }
        relay.refresh()
        return 0
    }

    /// The hand-set mode: the mode file's first line when there is a file, else `--mode`.
    static func handSetInput(_ mode: TrackMode?, modeFile: String?) -> BeaconInput {
        guard let modeFile else {
            return mode.map { .handSet($0) } ?? .none(reason: "no race control and no hand-set mode")
        }
        let bytes: [UInt8]
        do throws(BoundedFileError) {
            bytes = try readRegularFile(modeFile, maxBytes: 256)
        } catch {
            return .none(reason: "mode file \(modeFile) \(error)")
        }
        let line = String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isNewline).first ?? ""
        guard let parsed = TrackMode(remoteName: String(line)) else {
            return .none(
                reason: "mode file \(modeFile): \(TerminalText.escaped(String(line.prefix(40)))) is not a mode")
        }
        return .handSet(parsed)
    }
}
