import BLEPayload
import CircuitState

/// `replay --timeline`: feeds a capture's GeoRacing signals and a remote timeline through
/// the fusion engine on capture time, and prints each change of (mode, source, zone).
///
/// v3 frames are verified as `run` verifies them, with the capture's time as the receiver's clock
/// (both its engine time and its wall clock), so a scenario gives the same result on any day.
package struct TimelineReplay {
    let configuration: FusionConfiguration
    let decoder: GeoRacingDecoder
    let json: Bool
    let output: OutputStream
    /// Checks v3 tags; nil: no key file, and no v3 frame counts.
    let authenticator: (any FrameAuthenticator)?
    let clockWindow: Int64

    package init(
        configuration: FusionConfiguration, decoder: GeoRacingDecoder, json: Bool, output: OutputStream,
        authenticator: (any FrameAuthenticator)? = nil, clockWindow: Int64 = SignedFrameVerifier.defaultClockWindow
    ) {
        self.configuration = configuration
        self.decoder = decoder
        self.json = json
        self.output = output
        self.authenticator = authenticator
        self.clockWindow = clockWindow
    }

    package struct Summary {
        package var reports = 0
        package var signals = 0
        package var rejections = 0
        package var userBeacons = 0
        package var changes = 0
        package var counters = FusionCounters()
        package var signatures = SignatureCounters()
    }

    /// Replays `path`, printing each change. Remote entries come before capture records with the
    /// same timestamp.
    package func run(path: String, remote: RemoteTimeline?) throws(CaptureError) -> Summary {
        defer { output.flush() }
        return try fuse(path: path, remote: remote, observer: ChangePrinter(replay: self))
    }

    /// Feeds `path` and `remote` through the fusion engine on capture time, telling `observer` every
    /// report's time, every key the engine ingested and every evaluation, with the engine beside it.
    package func fuse(
        path: String, remote: RemoteTimeline?, observer: some FusionObserver
    ) throws(CaptureError) -> Summary {
        var driver = TimelineDriver(engine: FusionEngine(configuration: configuration))
        var verifier = SignedFrameVerifier(authenticator: authenticator, clockWindow: clockWindow)
        var summary = Summary()
        let remoteEntries = remote?.entries ?? []
        var nextRemote = 0
        let observe: TimelineDriver.Observer = { state, engine in
            if state.changed { summary.changes += 1 }
            observer.evaluated(state, engine: engine)
        }

        func applyRemote(through time: Int64) {
            while nextRemote < remoteEntries.count, remoteEntries[nextRemote].time <= time {
                let entry = remoteEntries[nextRemote]
                driver.input(at: entry.time, observe: observe) { engine in
                    switch entry.event {
                    case .fetched(let snapshot): engine.remoteFetched(snapshot, at: entry.time)
                    case .failed(let reason): engine.remoteFailed(at: entry.time, reason: reason)
                    }
                }
                nextRemote += 1
            }
        }

        let reader = try CaptureReader(path: path)
        var extractor = AdvertisingExtractor()
        while true {
            let next: CapturePacket?
            do {
                next = try reader.next()
            } catch {
                // Observe the state the records before the error produced; nothing after them is known.
                driver.settle(observe: observe)
                throw error
            }
            guard let packet = next else { break }
            extractor.process(packet) { report in
                summary.reports += 1
                observer.heard(at: report.timestamp)
                switch decoder.decode(report.data) {
                case .signal(let signal):
                    summary.signals += 1
                    var age: Int64 = 0
                    if signal.isSigned {
                        let verdict = verifier.check(signal, at: report.timestamp, wallClock: report.timestamp)
                        guard case .accepted(let signedAge) = verdict else { return }
                        age = signedAge
                    }
                    applyRemote(through: report.timestamp)
                    var outcome = IngestOutcome.refused
                    driver.input(at: report.timestamp, observe: observe) { engine in
                        outcome = engine.ingest(
                            signal, address: report.address, rssi: report.rssi,
                            txPower: report.txPower ?? report.data.txPowerLevel, age: age, at: report.timestamp)
                    }
                    observer.ingested(OverrideKey(signal: signal, address: report.address), outcome: outcome)
                case .rejected:
                    summary.rejections += 1
                case .userBeacon:
                    summary.userBeacons += 1
                case .none:
                    break
                }
            }
            if observer.stopped { break }
        }
        applyRemote(through: .max)
        driver.finish(observe: observe)
        summary.counters = driver.engine.counters
        summary.signatures = verifier.counters
        return summary
    }

    fileprivate func print(_ state: PublishedState) {
        if json {
            var writer = JSONWriter()
            writer.beginObject()
            writer.key("ts"); writer.seconds(micros: state.time)
            writer.key("mode"); writer.string(state.decision.modeName)
            writer.key("source"); writer.string(state.source.rawValue)
            writer.key("zone"); writer.int(state.zone)
            if state.source == .beacon, let override = state.override {
                writer.key("key"); writer.string(override.key.description)
                writer.key("addr"); writer.string(override.address.description)
                writer.key("seq"); writer.int(override.sequence)
                if override.signal.isSigned { writer.key("signed"); writer.bool(true) }
            }
            if state.source == .remote, let message = state.remote?.message {
                writer.key("message"); writer.string(message)
            }
            writer.endObject()
            writer.newline()
            output.write(writer.bytes)
        } else {
            output.write(Self.line(state) + "\n")
        }
    }

    /// `2026-05-16T12:00:10.000Z  RED FLAG  beacon zone 3`
    static func line(_ state: PublishedState) -> String {
        let mode = state.decision.modeName.uppercased().replacingOccurrences("_", " ")
        var text = TimeFormat.iso8601(micros: state.time) + "  " + mode + "  " + state.source.rawValue
        if let zone = state.zone { text += " zone \(zone)" }
        if state.source == .beacon, state.override?.signal.isSigned == true { text += " signed" }
        if state.source == .remote, let message = state.remote?.message, !message.isEmpty {
            text += " \"" + TerminalText.escaped(message) + "\""
        }
        return text
    }
}

/// What `TimelineReplay.fuse` tells as it goes: every advertising report's time, every key the engine
/// ingested (before the evaluation that reads it), and every evaluation with the engine right after it.
package protocol FusionObserver: AnyObject {
    func heard(at time: Int64)
    func ingested(_ key: OverrideKey, outcome: IngestOutcome)
    func evaluated(_ state: PublishedState, engine: FusionEngine)
    /// Stop reading the capture (the reader of the output went away).
    var stopped: Bool { get }
}

/// `replay --timeline`: prints each change.
private final class ChangePrinter: FusionObserver {
    let replay: TimelineReplay

    init(replay: TimelineReplay) { self.replay = replay }

    func heard(at time: Int64) {}
    func ingested(_ key: OverrideKey, outcome: IngestOutcome) {}
    func evaluated(_ state: PublishedState, engine: FusionEngine) {
        if state.changed { replay.print(state) }
    }
    var stopped: Bool { replay.output.readerGone }
}
