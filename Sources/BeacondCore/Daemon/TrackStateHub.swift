import BLEPayload
import CircuitState
import Logging
import NIOCore

/// Receives what the hub publishes. Called on the hub's event loop.
protocol TrackStateSubscriber: AnyObject {
    /// Whether this subscriber asked for `{"type":"beacon"}` updates.
    var wantsBeacons: Bool { get }
    /// A new state message, one complete line.
    func deliver(state line: ByteBuffer)
    /// A beacon update line, already coalesced to at most 4 per second per beacon.
    func deliver(beacon line: ByteBuffer)
}

/// The engine's clock as the daemon runs it.
package protocol EngineClock: AnyObject {
    /// Engine time now, microseconds: CLOCK_BOOTTIME live, capture time in replay.
    func now() -> Int64
    /// The real time until the engine clock reaches `time`; nil when it never gets there by
    /// itself (a replay at maximum speed, driven input by input).
    func realDelay(until time: Int64) -> TimeAmount?
}

/// CLOCK_BOOTTIME: monotonic, and counting through suspend.
package final class BootClock: EngineClock {
    package init() {}

    package func now() -> Int64 { MonotonicClock.bootMicros() }

    package func realDelay(until time: Int64) -> TimeAmount? {
        .microseconds(max(0, time - now()))
    }
}

/// The heart of the daemon: owns the fusion engine and the beacon directory, turns inputs
/// into published state messages, runs expiry and staleness timers, and fans every change out
/// to subscribers. Everything happens on one event loop: callers on other threads hop onto
/// `eventLoop` (which is why it may be shared across threads) and call it only there.
package final class TrackStateHub: @unchecked Sendable {
    package let eventLoop: EventLoop
    let clock: EngineClock
    private let logger: Logger
    private(set) var driver: TimelineDriver
    /// A copy of the engine's configuration: publishing runs inside driver calls, so it must
    /// not read the driver.
    private(set) var configuration: FusionConfiguration
    private(set) var directory = BeaconDirectory()
    private(set) var scanner: ScannerStatus
    private(set) var scannerDetail: String?
    package private(set) var seq = 0
    private(set) var latest: PublishedState
    private(set) var stateLine: ByteBuffer
    private var lastPublicationKey: PublicationKey?
    private(set) var subscribers: [ObjectIdentifier: TrackStateSubscriber] = [:]
    private var beaconSubscribers = 0
    private var beaconThrottle = BeaconThrottle()
    private var spoofWarnings = SpoofWarningLimiter()
    var statusCache: (builtAt: Int64, seq: Int, line: ByteBuffer)?
    private var deadlineTimer: Scheduled<Void>?
    private var timerDeadline: Int64?
    private var suspendCheck: RepeatedTask?
    package internal(set) var counters = HubCounters()
    /// A replay at maximum speed is delivering inputs: evaluate a timestamp's inputs together,
    /// when the next timestamp arrives, as `replay --timeline` does. Otherwise every input is
    /// evaluated at once.
    private var groupsInputs = false
    let startedAt = MonotonicClock.micros()
    /// Called after each published state message (systemd STATUS, for one).
    var onPublish: ((PublishedState, Int) -> Void)?
    /// Add their typed parts to a status reply (the socket server's counters, the scanner
    /// backend's, the remote poller's health).
    var statusProviders: [(inout StatusMessage) -> Void] = []

    package struct HubCounters {
        package var signals = 0
        var rejectedFrames = 0
        package var published = 0
        var beaconUpdates = 0
        /// Status requests answered with a line built for an earlier request.
        var statusReused = 0
    }

    /// The fields whose change makes a new state message (and a new `seq`).
    private struct PublicationKey: Equatable {
        var decision: Decision
        var beaconKey: OverrideKey?
        var remoteMessage: String?
        var remoteFresh: Bool?
        var remoteLatched: Bool?
        var scanner: ScannerStatus
    }

    package init(
        eventLoop: EventLoop, configuration: FusionConfiguration, clock: EngineClock, backend: String,
        logger: Logger
    ) {
        self.eventLoop = eventLoop
        self.clock = clock
        self.logger = logger
        driver = TimelineDriver(engine: FusionEngine(configuration: configuration))
        self.configuration = configuration
        scanner = ScannerStatus(backend: backend, state: .down)
        latest = PublishedState(time: clock.now(), decision: .undecided, changed: true)
        stateLine = ByteBuffer()
    }

    var engine: FusionEngine { driver.engine }

    /// Publishes the initial state and starts the suspend check; call once, on the loop.
    package func start(checkClockEvery interval: TimeAmount? = .seconds(1)) {
        eventLoop.preconditionInEventLoop()
        driver.advance(through: clock.now(), emit: publish)
        if lastPublicationKey == nil { driver.reevaluate(at: clock.now(), emit: publish) }
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
        eventLoop.assertInEventLoop()
        let now = time ?? clock.now()
        counters.signals += 1
        var outcome = IngestOutcome.refused
        driver.input(at: now, emit: publish) { engine in
            outcome = engine.ingest(signal, address: address, rssi: rssi, txPower: txPower, at: now)
        }
        directory.record(signal, address: address, rssi: rssi, txPower: txPower, outcome: outcome, at: now)
        if case .contested(started: true) = outcome {
            warnOfContest(OverrideKey(signal: signal, address: address), at: now)
        }
        if !groupsInputs { driver.settle(emit: publish) }
        if beaconSubscribers > 0 {
            publishBeacon(OverrideKey(signal: signal, address: address), at: now)
        }
        rescheduleTimer()
    }

    /// A frame with the GeoRacing company id that is not a valid signal.
    func rejectedFrame() {
        counters.rejectedFrames += 1
    }

    func remoteFetched(_ snapshot: RemoteSnapshot, at time: Int64? = nil) {
        eventLoop.assertInEventLoop()
        let now = time ?? clock.now()
        driver.input(at: now, emit: publish) { $0.remoteFetched(snapshot, at: now) }
        if !groupsInputs { driver.settle(emit: publish) }
        rescheduleTimer()
    }

    func remoteFailed(reason: String, at time: Int64? = nil) {
        let now = time ?? clock.now()
        driver.input(at: now, emit: publish) { $0.remoteFailed(at: now, reason: reason) }
        if !groupsInputs { driver.settle(emit: publish) }
        rescheduleTimer()
    }

    /// The remote state saved before a restart; call before `start()`. It shows as "last known"
    /// (stale, with its true age); a latched evacuation is published again at once.
    func restoreRemote(_ restoration: RemoteRestoration) {
        let now = clock.now()
        // A replay clock may stand near Int64.min: the fetch time saturates rather than overflows.
        let (fetchedAt, overflow) = now.subtractingReportingOverflow(restoration.age)
        driver.modifyEngine {
            $0.restoreRemote(
                restoration.snapshot, fetchedAt: overflow ? .min : fetchedAt,
                latchedSnapshot: restoration.latchedSnapshot, at: now)
        }
    }

    /// The scanner came up, went down or stopped. `detail` (why, for example the adapter is
    /// gone) shows in status replies; only the state itself is published. A new state, or the
    /// first reason given for one, is logged; a new detail alone (the next retry's delay) only at
    /// debug level: the backends log their own failures.
    func setScanner(_ state: ScannerStatus.State, detail: String? = nil) {
        let stateChanged = scanner.state != state
        if stateChanged || (scannerDetail == nil && detail != nil) {
            logger.log(
                level: state == .down ? .warning : .info,
                "scanner \(scanner.backend) \(state.rawValue)\(detail.map { ": " + TerminalText.escaped($0) } ?? "")")
        } else if detail != scannerDetail, let detail {
            logger.debug("scanner \(scanner.backend) \(state.rawValue): \(TerminalText.escaped(detail))")
        }
        scannerDetail = detail
        guard stateChanged else { return }
        scanner.state = state
        republish()
    }

    func reconfigure(_ configuration: FusionConfiguration) {
        self.configuration = configuration
        driver.modifyEngine { $0.reconfigure(configuration) }
        republish()
    }

    /// A replay pass starts again: forget the overrides (and what was heard), keep the remote state.
    func clearOverrides() {
        driver.settle(emit: publish)
        driver.modifyEngine { $0.clearOverrides() }
        directory.removeAll()
        republish()
    }

    /// Replay at maximum speed starts: inputs sharing a timestamp are evaluated together.
    func beginTimeline() {
        groupsInputs = true
    }

    /// Replay at maximum speed ends: evaluates every pending expiry and staleness, then holds;
    /// later inputs (remote fetches) are evaluated at once again.
    func finishTimeline() {
        groupsInputs = false
        driver.finish(emit: publish)
        rescheduleTimer()
    }

    // MARK: Subscribers

    func subscribe(_ subscriber: TrackStateSubscriber) {
        subscribers[ObjectIdentifier(subscriber)] = subscriber
        recountBeaconSubscribers()
    }

    func unsubscribe(_ subscriber: TrackStateSubscriber) {
        subscribers[ObjectIdentifier(subscriber)] = nil
        recountBeaconSubscribers()
    }

    /// Call when a subscriber's `wantsBeacons` changes.
    func recountBeaconSubscribers() {
        beaconSubscribers = subscribers.values.reduce(0) { $0 + ($1.wantsBeacons ? 1 : 0) }
    }

    var subscriberCount: Int { subscribers.count }

    // MARK: Publishing

    private func publish(_ state: PublishedState) {
        latest = state
        let key = PublicationKey(
            decision: state.decision, beaconKey: state.source == .beacon ? state.override?.key : nil,
            remoteMessage: state.remote?.message, remoteFresh: state.remote?.isFresh,
            remoteLatched: state.remote?.isLatched, scanner: scanner)
        guard key != lastPublicationKey else { return }
        lastPublicationKey = key
        seq += 1
        counters.published += 1
        let view = PublicationView(
            state: state, directory: directory, configuration: configuration, scanner: scanner,
            wallMicros: MonotonicClock.wallMicros())
        stateLine = ByteBuffer(bytes: StateMessage(seq: seq, view: view).line)
        // Clients first: the audit line and systemd's STATUS can wait a few microseconds.
        for subscriber in subscribers.values { subscriber.deliver(state: stateLine) }
        audit(state)
        onPublish?(state, directory.count)
    }

    /// Publishes again if something outside the engine's decision changed (scanner, configuration).
    private func republish() {
        driver.reevaluate(at: clock.now(), emit: publish)
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
            if let message = remote.message { line += " remote_message=\"\(TerminalText.logged(message))\"" }
        }
        line += " scanner=\(scanner.state.rawValue)"
        auditLog.record(line)
    }

    private func publishBeacon(_ key: OverrideKey, at now: Int64) {
        let due = MonotonicClock.micros()
        switch beaconThrottle.offer(key, at: due) {
        case .sendNow:
            sendBeacon(key, at: now)
        case .scheduled(let delay):
            eventLoop.scheduleTask(in: .microseconds(delay)) { [weak self] in
                guard let self else { return }
                if self.beaconThrottle.takePending(key, at: MonotonicClock.micros()) {
                    self.sendBeacon(key, at: self.clock.now())
                }
            }
        case .alreadyPending:
            break
        }
    }

    private func sendBeacon(_ key: OverrideKey, at now: Int64) {
        guard let entry = directory.entry(for: key) else { return }
        let override = driver.engine.activeOverride(for: key, at: now)
        guard let beacon = BeaconReport(override: override, directory: entry, configuration: configuration, now: now)
        else { return }
        let message = BeaconMessage(time: WallTime(micros: MonotonicClock.wallMicros()), beacon: beacon)
        let line = ByteBuffer(bytes: message.line)
        counters.beaconUpdates += 1
        for subscriber in subscribers.values where subscriber.wantsBeacons { subscriber.deliver(beacon: line) }
    }

    /// A key's first contest is logged at warning level, at most once per key per minute.
    private func warnOfContest(_ key: OverrideKey, at now: Int64) {
        guard spoofWarnings.shouldWarn(key, at: now),
            let override = driver.engine.activeOverride(for: key, at: now),
            let contested = override.contestedClaim
        else { return }
        var heard = "\(contested.sequence) (\(contested.mode.rawValue))"
        if let inForce = override.claimInForce {
            heard += " and \(inForce.sequence) (\(inForce.mode.rawValue))"
        }
        logger.warning("possible spoofing: \(key) heard with sequences \(heard)")
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
        guard let deadline = driver.engine.nextDeadline(after: driver.engine.clock), deadline <= now else { return }
        driver.advance(through: now, emit: publish)
        rescheduleTimer()
    }

    /// Keeps one timer armed for the engine's next deadline.
    private func rescheduleTimer() {
        guard let next = driver.engine.nextDeadline(after: driver.engine.clock),
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
            self.driver.advance(through: max(next, self.clock.now()), emit: self.publish)
            self.rescheduleTimer()
        }
    }
}
