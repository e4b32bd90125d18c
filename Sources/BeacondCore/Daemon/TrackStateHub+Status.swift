import BLEPayload
import CircuitState
import Logging
import NIOCore

/// The status reply: built from the hub's own counters and the edges' typed parts, cached
/// briefly so a burst of requests shares one rendering.
extension TrackStateHub {
    /// Entries listed per array of a status reply (`overrides`, `beacons`); the rest are counted.
    static let statusListLimit = 256

    /// How long one status line answers every client that asks, while no state is published:
    /// building one for a full table costs milliseconds, and a thousand clients each asking ten
    /// times a second must not turn that into seconds of the loop's time.
    static let statusReuseInterval: Int64 = 100_000

    /// The status line for a client's request: the one built for an earlier request, if it is
    /// under `statusReuseInterval` old and no state was published since; else a new one.
    func sharedStatusLine() -> ByteBuffer {
        let now = MonotonicClock.micros()
        if let cached = statusCache, cached.seq == seq, now >= cached.builtAt,
            now - cached.builtAt < Self.statusReuseInterval
        {
            counters.statusReused += 1
            return cached.line
        }
        let line = ByteBuffer(bytes: statusLine())
        statusCache = (now, seq, line)
        return line
    }

    /// A `{"type":"status"}` line: the state, active overrides (best first) and recently heard
    /// beacons (most recent first), each list cut to `listLimit` entries with the number left out
    /// (`overrides_omitted`, `beacons_omitted`), remote and scanner health, counters and uptime,
    /// then whatever `statusProviders` add.
    func statusLine(listLimit: Int = TrackStateHub.statusListLimit) -> [UInt8] {
        let listLimit = max(0, listLimit)
        let now = clock.now()
        let view = PublicationView(
            state: latest, directory: directory, configuration: configuration, scanner: scanner,
            wallMicros: MonotonicClock.wallMicros())
        let engine = driver.engine
        var beaconsCut: [BeaconReport] = []
        let overrides = engine.activeOverrides(at: now)
        let overridesCut = overrides.prefix(listLimit).compactMap { override in
            BeaconReport(
                override: override, directory: directory.entry(for: override.key),
                configuration: engine.configuration, now: now)
        }
        let recent = directory.recent
        beaconsCut.reserveCapacity(min(recent.count, listLimit))
        for entry in recent.prefix(listLimit) {
            if let beacon = BeaconReport(
                override: engine.activeOverride(for: entry.key, at: now), directory: entry,
                configuration: engine.configuration, now: now)
            {
                beaconsCut.append(beacon)
            }
        }
        var status = StatusMessage(
            uptime: Double(MonotonicClock.micros() - startedAt) / 1_000_000, state: StateMessage(seq: seq, view: view),
            overrides: overridesCut, overridesOmitted: max(0, overrides.count - listLimit), beacons: beaconsCut,
            beaconsOmitted: max(0, recent.count - listLimit),
            remote: engine.remoteStatus(at: now).map(RemoteReport.init),
            scanner: ScannerStatus(backend: scanner.backend, state: scanner.state, detail: scannerDetail),
            counters: statusCounters())
        for provider in statusProviders { provider(&status) }
        return status.line
    }

    /// `status.counters`: the hub's, the engine's and the directory's.
    func statusCounters() -> HubStatusCounters {
        let engine = driver.engine
        let fusion = engine.counters
        var status = HubStatusCounters()
        status.signals = counters.signals
        status.rejectedFrames = counters.rejectedFrames
        status.accepted = fusion.accepted
        status.repeats = fusion.repeats
        status.olderIgnored = fusion.olderIgnored
        status.contests = fusion.contests
        status.contestedFrames = fusion.contestedFrames
        status.filteredRSSI = fusion.filteredRSSI
        status.filteredZone = fusion.filteredZone
        status.filteredAllow = fusion.filteredAllow
        status.filteredDistance = fusion.filteredDistance
        status.filteredUnknownMode = fusion.filteredUnknownMode
        status.expired = fusion.expired
        status.evicted = fusion.evicted
        status.refused = fusion.refused
        status.overrides = engine.overrideCount
        status.beaconsForgotten = directory.forgotten
        status.remoteFetches = fusion.remoteSuccesses
        status.remoteFailures = fusion.remoteFailures
        status.published = counters.published
        status.beaconUpdates = counters.beaconUpdates
        status.statusReused = counters.statusReused
        status.subscribers = subscribers.count
        return status
    }
}
