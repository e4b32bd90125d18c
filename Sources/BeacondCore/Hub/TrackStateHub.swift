import BLEPayload
import CircuitState
import Logging
import NIOCore

/// The publication core of the daemon: owns the fusion engine and the beacon directory, turns
/// inputs into publications (deduplicated, numbered by `seq`, one audit line each), and runs the
/// expiry and staleness timers. It emits `HubEvent`s, each rendered once, to its outputs in the
/// order they were connected (the socket server's `TrackStatePublisher` first); no output calls
/// it back.
///
/// Everything happens on one event loop: callers on other threads hop onto `eventLoop` (which is
/// why it may be shared across threads), and every entry point checks that it runs there.
/// Outputs are connected before `start()`, which the starting thread then submits to the loop.
// @unchecked Sendable: confined to its event loop, which every entry point checks.
package final class TrackStateHub: @unchecked Sendable {
    package let eventLoop: EventLoop
    package let clock: EngineClock
    let logger: Logger
    private var driver: TimelineDriver
    /// A copy of the engine's configuration: publishing runs inside driver calls, so it must
    /// not read the driver.
    private(set) var configuration: FusionConfiguration
    /// `zones.names`: a presentation concern, kept here rather than in the engine.
    private(set) var zoneNames: ZoneNames
    private(set) var directory = BeaconDirectory()
    /// Changed only by `setScanner` (TrackStateHub+Scanner.swift).
    var scannerHealth: ScannerHealth
    /// The scanner's health as published (no reasons, no counters).
    var scanner: ScannerStatus { scannerHealth.published }
    /// Counts copies of an advert heard on several adapters once; nil with one adapter.
    var copyFilter: AdapterCopyFilter?
    package private(set) var seq = 0
    private(set) var latest: PublishedState
    private var lastPublicationKey: PublicationKey?
    /// The receivers of every event, in the order connected.
    private var outputs: [any HubOutput] = []
    /// Beacon updates, at most one per beacon per `beaconUpdateInterval` (`KeyedCoalescer`),
    /// offered only while an output wants them. Beyond its 16,384 beacons in their window (four
    /// times the engine's table) an update is dropped and counted.
    private lazy var beaconUpdates = KeyedCoalescer<OverrideKey, Int64>(
        eventLoop: eventLoop, interval: .microseconds(Self.beaconUpdateInterval), maxKeys: 16_384
    ) { [unowned self] key, time, atOnce in
        emitBeaconUpdate(key, at: atOnce ? time : nil)
    }
    /// The race so far, for `history` requests, bounded by count and bytes (TrackStateHub+History.swift).
    private(set) var history = RaceRecorder(
        limit: TrackStateHub.historyLimit, byteLimit: TrackStateHub.historyByteLimit)
    /// The wall clock's offset the history's pages use (TrackStateHub+History.swift).
    var historyOffset: Int64?
    var spoofWarnings = SpoofWarningLimiter()
    /// Checks v3 frames before the engine sees them (TrackStateHub+Verification.swift).
    var verifier = SignedFrameVerifier(authenticator: nil)
    var forgeryWarnings = SpoofWarningLimiter()
    private var deadlineTimer: Scheduled<Void>?
    private var timerDeadline: Int64?
    private var suspendCheck: RepeatedTask?
    private var started = false
    package private(set) var counters = HubCounters()
    /// A replay at maximum speed is delivering inputs: evaluate a timestamp's inputs together,
    /// when the next timestamp arrives, as `replay --timeline` does. Otherwise every input is
    /// evaluated at once.
    private var groupsInputs = false
    let startedAt = MonotonicClock.micros()

    /// The shortest time between two updates of one beacon, µs.
    static let beaconUpdateInterval: Int64 = 250_000

    /// The fields whose change makes a new state message (and a new `seq`).
    private struct PublicationKey: Equatable {
        var decision: Decision
        var beaconKey: OverrideKey?
        /// The shown zone's name: a rename is a new publication.
        var zoneName: String?
        var remoteMessage: String?
        /// Race control's route out: kiosks show it during an evacuation, so a new one is published.
        var remoteRoute: String?
        var remoteFresh: Bool?
        var remoteLatched: Bool?
        var scanner: ScannerStatus
    }

    package init(
        eventLoop: EventLoop, configuration: FusionConfiguration, zoneNames: ZoneNames = ZoneNames(),
        clock: EngineClock, backend: String, adapters: [String] = [], copyFilter: AdapterCopyFilter? = nil,
        logger: Logger
    ) {
        self.eventLoop = eventLoop
        self.clock = clock
        self.logger = logger
        driver = TimelineDriver(engine: FusionEngine(configuration: configuration))
        self.configuration = configuration
        self.zoneNames = zoneNames
        scannerHealth = ScannerHealth(backend: backend, adapters: adapters)
        self.copyFilter = copyFilter
        latest = PublishedState(time: clock.now(), decision: .undecided, changed: true)
    }

    var engine: FusionEngine { driver.engine }

    /// Connects `outputs`, after those connected before; every event reaches them in that order.
    /// Before `start()` only, so the first publication reaches every output.
    package func connect(_ outputs: [any HubOutput]) {
        precondition(!started, "outputs are connected before the hub starts")
        self.outputs += outputs
    }

    /// Publishes the initial state and starts the suspend check; call once, on the loop.
    package func start(checkClockEvery interval: TimeAmount? = .seconds(1)) {
        eventLoop.preconditionInEventLoop()
        started = true
        driver.advance(through: clock.now(), observe: observed)
        if lastPublicationKey == nil { driver.reevaluate(at: clock.now(), observe: observed) }
        if let interval {
            // NIO timers run on CLOCK_MONOTONIC, which stops during suspend; this catches deadlines
            // that CLOCK_BOOTTIME passed while the machine slept.
            suspendCheck = eventLoop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { [weak self] _ in
                self?.checkDeadlines()
            }
        }
        rescheduleTimer()
    }

    package func stop() {
        eventLoop.preconditionInEventLoop()
        suspendCheck?.cancel()
        deadlineTimer?.cancel()
        suspendCheck = nil
        deadlineTimer = nil
    }

    // MARK: Inputs

    /// One GeoRacing signal from a scanner; `time` nil means now.
    package func ingest(
        _ signal: GeoRacingSignal, address: BluetoothAddress, rssi: Int8?, txPower: Int8?, at time: Int64? = nil
    ) {
        eventLoop.preconditionInEventLoop()
        let now = time ?? clock.now()
        let key = input(signal, address: address, rssi: rssi, txPower: txPower, at: now)
        if !groupsInputs { driver.settle(observe: observed) }
        if wantsBeaconUpdates { offerBeaconUpdate(key, at: now) }
        rescheduleTimer()
    }

    /// A live scanner's signals and rejected frames, in the order heard. The signals heard at one
    /// time (one read of the adapter) are evaluated together, as the engine's inputs sharing a
    /// timestamp are: one evaluation and one timer check per read, not per report. Beacon updates
    /// follow the batch's publications.
    func ingest(_ batch: ScannedSignalBatch) {
        eventLoop.preconditionInEventLoop()
        countFrames(rejected: batch.rejectedFrames, userBeacons: batch.userBeacons)
        guard !batch.signals.isEmpty else { return }
        var admitted = 0
        for item in batch.signals where admits(item) {
            admitted += 1
            _ = input(item.signal, address: item.address, rssi: item.rssi, txPower: item.txPower, at: item.time)
        }
        guard admitted > 0 else { return }
        if !groupsInputs { driver.settle(observe: observed) }
        if wantsBeaconUpdates {
            // A dropped copy offers its advert's update again: the coalescer keeps one per beacon.
            for item in batch.signals {
                offerBeaconUpdate(OverrideKey(signal: item.signal, address: item.address), at: item.time)
            }
        }
        rescheduleTimer()
    }

    /// Offers one signal to the engine and records it in the directory, unevaluated (the driver
    /// evaluates it when the time moves on or at `settle`); returns its key.
    private func input(
        _ signal: GeoRacingSignal, address: BluetoothAddress, rssi: Int8?, txPower: Int8?, at now: Int64
    ) -> OverrideKey {
        counters.signals += 1
        var age: Int64 = 0
        if signal.isSigned {
            switch verify(signal, address: address, at: now) {
            case .accepted(let signedAge): age = signedAge
            case .unsigned: break
            case .rejected(let reason):
                let outcome = IngestOutcome.unverified(reason)
                directory.record(signal, address: address, rssi: rssi, txPower: txPower, outcome: outcome, at: now)
                return OverrideKey(signal: signal, address: address)
            }
        }
        var outcome = IngestOutcome.refused
        driver.input(at: now, observe: observed) { engine in
            outcome = engine.ingest(signal, address: address, rssi: rssi, txPower: txPower, age: age, at: now)
        }
        directory.record(signal, address: address, rssi: rssi, txPower: txPower, outcome: outcome, at: now)
        let key = OverrideKey(signal: signal, address: address)
        history.ingested(key, outcome: outcome)
        if case .contested(started: true) = outcome { warnOfContest(key, at: now) }
        return key
    }

    /// Frames with the GeoRacing company id that are not valid signals, and attendees' user
    /// beacons (counted, nothing else: their locations are not the daemon's to keep).
    func countFrames(rejected: Int, userBeacons: Int) {
        eventLoop.preconditionInEventLoop()
        counters.rejectedFrames += rejected
        counters.userBeacons += userBeacons
    }

    func remoteFetched(_ snapshot: RemoteSnapshot, at time: Int64? = nil) {
        eventLoop.preconditionInEventLoop()
        let now = time ?? clock.now()
        driver.input(at: now, observe: observed) { $0.remoteFetched(snapshot, at: now) }
        if !groupsInputs { driver.settle(observe: observed) }
        rescheduleTimer()
        emit(.remoteFetched(snapshot))
    }

    func remoteFailed(reason: String, at time: Int64? = nil) {
        eventLoop.preconditionInEventLoop()
        let now = time ?? clock.now()
        driver.input(at: now, observe: observed) { $0.remoteFailed(at: now, reason: reason) }
        if !groupsInputs { driver.settle(observe: observed) }
        rescheduleTimer()
    }

    /// The remote state saved before a restart; call before `start()`. It shows as "last known"
    /// (stale, with its true age); a latched evacuation is published again at once.
    func restoreRemote(_ restoration: RemoteRestoration) {
        eventLoop.preconditionInEventLoop()
        let now = clock.now()
        // A replay clock may stand near Int64.min: the fetch time saturates rather than overflows.
        let (fetchedAt, overflow) = now.subtractingReportingOverflow(restoration.age)
        driver.modifyEngine {
            $0.restoreRemote(
                restoration.snapshot, fetchedAt: overflow ? .min : fetchedAt,
                latchedSnapshot: restoration.latchedSnapshot, at: now)
        }
    }

    /// New fusion settings, and new zone names when given; publishes once, if what is shown changed.
    func reconfigure(_ configuration: FusionConfiguration, zoneNames: ZoneNames? = nil) {
        eventLoop.preconditionInEventLoop()
        self.configuration = configuration
        if let zoneNames { self.zoneNames = zoneNames }
        driver.modifyEngine { $0.reconfigure(configuration) }
        history.engineRevised(endingDroppedClaimsAs: .reconfigured)
        republish()
    }

    /// New zone names (a reload): published at once when the shown zone's name changed.
    func reconfigure(zoneNames: ZoneNames) {
        eventLoop.preconditionInEventLoop()
        self.zoneNames = zoneNames
        republish()
    }

    /// A replay pass starts again: forget the overrides (and what was heard), keep the remote state.
    func clearOverrides() {
        eventLoop.preconditionInEventLoop()
        driver.settle(observe: observed)
        driver.modifyEngine { $0.clearOverrides() }
        history.engineRevised(endingDroppedClaimsAs: .recordingEnded)
        directory.removeAll()
        republish()
    }

    /// Replay at maximum speed starts: inputs sharing a timestamp are evaluated together.
    func beginTimeline() {
        eventLoop.preconditionInEventLoop()
        groupsInputs = true
    }

    /// Replay at maximum speed ends: evaluates every pending expiry and staleness, then holds;
    /// later inputs (remote fetches) are evaluated at once again.
    func finishTimeline() {
        eventLoop.preconditionInEventLoop()
        groupsInputs = false
        driver.finish(observe: observed)
        rescheduleTimer()
    }

    // MARK: Publishing

    /// Every evaluation: into the history, then published if it changed what is shown.
    private func observed(_ state: PublishedState, _ engine: FusionEngine) {
        history.observe(state, engine: engine)
        publish(state)
    }

    private func publish(_ state: PublishedState) {
        latest = state
        let key = PublicationKey(
            decision: state.decision, beaconKey: state.source == .beacon ? state.override?.key : nil,
            zoneName: zoneNames[state.zone], remoteMessage: state.remote?.message,
            remoteRoute: state.remote?.evacuationRoute, remoteFresh: state.remote?.isFresh,
            remoteLatched: state.remote?.isLatched, scanner: scanner)
        guard key != lastPublicationKey else { return }
        lastPublicationKey = key
        seq += 1
        counters.published += 1
        let view = PublicationView(
            state: state, directory: directory, configuration: configuration, zoneNames: zoneNames, scanner: scanner,
            wallMicros: MonotonicClock.wallMicros())
        let publication = Publication(
            seq: seq, state: state, message: StateMessage(seq: seq, view: view), beaconsHeard: directory.count)
        // Outputs first (the socket's clients): the audit line can wait a few microseconds.
        emit(.published(publication))
        audit(state)
    }

    private func emit(_ event: HubEvent) {
        for output in outputs { output.receive(event) }
    }

    // MARK: Beacon updates

    private var wantsBeaconUpdates: Bool {
        outputs.contains { $0.wantsBeaconUpdates }
    }

    private func offerBeaconUpdate(_ key: OverrideKey, at time: Int64) {
        if beaconUpdates.offer(time, for: key) == .refused { counters.beaconUpdatesDropped += 1 }
    }

    /// Emits `key`'s report as of engine time `time` (nil: now), if an output still wants it.
    private func emitBeaconUpdate(_ key: OverrideKey, at time: Int64?) {
        guard wantsBeaconUpdates, let report = beaconReport(for: key, at: time) else { return }
        emit(.beaconUpdate(BeaconUpdate(key: key, report: report)))
    }

    /// Publishes again if something outside the engine's decision changed (scanner, configuration).
    func republish() {
        driver.reevaluate(at: clock.now(), observe: observed)
        rescheduleTimer()
    }

    /// The audit lines, summarised past 20 a second (`AuditSummariser`).
    private lazy var auditLog = StateAuditLog(logger: logger, eventLoop: eventLoop)

    /// One info line per published change: mode, source, zone, beacon key or remote message, seq.
    /// Past 20 a second they are summed up once a second, with the last one in full.
    private func audit(_ state: PublishedState) {
        guard logger.logLevel <= .info else { return }
        var line = "state seq=\(seq) mode=\(state.decision.modeName) source=\(state.source.rawValue)"
        line += " zone=\(state.zone.map(String.init) ?? "-")"
        if state.source == .beacon, let override = state.override {
            line += " beacon=\"\(override.key)\" beacon_seq=\(override.sequence)"
        }
        if let remote = state.remote {
            line += " remote_fresh=\(remote.isFresh) remote_latched=\(remote.isLatched)"
            // Quotes and backslashes escaped too: a message cannot close its quotes and forge fields.
            if let message = remote.message {
                let quoted = message.replacing("\\", with: "\\\\").replacing("\"", with: "\\\"")
                line += " remote_message=\"\(TerminalText.logged(quoted))\""
            }
        }
        line += " scanner=\(scanner.state.rawValue)"
        auditLog.record(line)
    }

    /// The override in force for `key` at `now`, read in place (not through a copy of the engine).
    func activeOverride(for key: OverrideKey, at now: Int64) -> ActiveOverride? {
        driver.engine.activeOverride(for: key, at: now)
    }

    // MARK: Timers

    /// Publishes what the engine's deadlines changed up to now; the daemon calls it once more when
    /// it stops, so the last state clients see before `bye` is current.
    func publishDueChanges() {
        eventLoop.preconditionInEventLoop()
        checkDeadlines()
    }

    private func checkDeadlines() {
        let now = clock.now()
        guard let deadline = driver.nextDeadline, deadline <= now else { return }
        driver.advance(through: now, observe: observed)
        rescheduleTimer()
    }

    /// Keeps one timer armed for the engine's next deadline.
    private func rescheduleTimer() {
        guard let next = driver.nextDeadline,
            let delay = clock.realDelay(until: next)
        else {
            deadlineTimer?.cancel()
            deadlineTimer = nil
            timerDeadline = nil
            return
        }
        if let armed = timerDeadline, armed <= next { return }
        deadlineTimer?.cancel()
        timerDeadline = next
        deadlineTimer = eventLoop.scheduleTask(in: delay) { [weak self] in
            guard let self else { return }
            self.timerDeadline = nil
            self.deadlineTimer = nil
            self.driver.advance(through: max(next, self.clock.now()), observe: self.observed)
            self.rescheduleTimer()
        }
    }
}
