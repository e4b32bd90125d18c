import BLEPayload
import CircuitState
import Logging
import NIOCore

/// The hub's part of a status reply, as a value: the publisher adds its own counters and the
/// edges' parts, renders it, and shares one rendering among a burst of requests.
extension TrackStateHub {
    /// Entries listed per array of a status reply (`overrides`, `beacons`); the rest are counted.
    static let statusListLimit = 256

    /// A `{"type":"status"}` message: the state, active overrides (best first) and recently heard
    /// beacons (most recent first), each list cut to `listLimit` entries with the number left out
    /// (`overrides_omitted`, `beacons_omitted`), remote and scanner health, counters and uptime.
    /// With `listLimit` 0 (the metrics endpoint's scrape) the lists are not built at all: the
    /// omitted counts are the table sizes, and the loop spends no sort on them.
    func statusMessage(listLimit: Int = TrackStateHub.statusListLimit) -> StatusMessage {
        eventLoop.preconditionInEventLoop()
        let listLimit = max(0, listLimit)
        let now = clock.now()
        let view = PublicationView(
            state: latest, directory: directory, configuration: configuration, zoneNames: zoneNames, scanner: scanner,
            wallMicros: MonotonicClock.wallMicros())
        let engine = self.engine
        var beaconsCut: [BeaconReport] = []
        guard listLimit > 0 else {
            return StatusMessage(
                uptime: Double(MonotonicClock.micros() - startedAt) / 1_000_000,
                state: StateMessage(seq: seq, view: view), overrides: [], overridesOmitted: engine.overrideCount,
                beacons: [], beaconsOmitted: directory.count,
                remote: engine.remoteStatus(at: now).map(RemoteReport.init),
                scanner: scannerHealth.detailed,
                counters: statusCounters(), signed: signedStatus(at: now))
        }
        // Only the listed entries are snapshot and reported: the rest are ranked and counted
        // (a full table holds 4096 overrides, and the loop publishes nothing while this runs).
        let overrides = engine.activeOverrides(at: now, limit: listLimit)
        let overridesCut = overrides.best.compactMap { override in
            BeaconReport(
                override: override, directory: directory.entry(for: override.key),
                configuration: engine.configuration, zoneNames: zoneNames, now: now)
        }
        let recent = directory.recent(limit: listLimit)
        beaconsCut.reserveCapacity(recent.listed.count)
        for entry in recent.listed {
            if let beacon = BeaconReport(
                override: engine.activeOverride(for: entry.key, at: now), directory: entry,
                configuration: engine.configuration, zoneNames: zoneNames, now: now)
            {
                beaconsCut.append(beacon)
            }
        }
        return StatusMessage(
            uptime: Double(MonotonicClock.micros() - startedAt) / 1_000_000, state: StateMessage(seq: seq, view: view),
            overrides: overridesCut, overridesOmitted: max(0, overrides.activeCount - overrides.best.count),
            beacons: beaconsCut, beaconsOmitted: max(0, recent.total - recent.listed.count),
            remote: engine.remoteStatus(at: now).map(RemoteReport.init),
            scanner: scannerHealth.detailed,
            counters: statusCounters(), signed: signedStatus(at: now))
    }

    /// The hub's part of a status reply, rendered as a request renders it: what
    /// beacond-daemon-bench times on the loop (`--only status`).
    package func renderedStatusLine(listLimit: Int = TrackStateHub.statusListLimit) -> [UInt8] {
        statusMessage(listLimit: listLimit).line
    }

    /// The sizes a status reply lists from: overrides in the table, beacons in the directory.
    package var statusTableSizes: (overrides: Int, beacons: Int) {
        (engine.overrideCount, directory.count)
    }

    /// `status.counters`: the hub's, the engine's and the directory's (the publisher adds its own).
    func statusCounters() -> HubStatusCounters {
        let engine = self.engine
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
        status.beaconUpdatesDropped = counters.beaconUpdatesDropped
        status.userBeacons = counters.userBeacons
        status.filteredReportOnly = fusion.filteredReportOnly
        status.belowSigned = fusion.belowSigned
        status.filteredUnsigned = fusion.filteredUnsigned
        return status
    }

    /// A `beacon` update's content for `key` at engine time `time` (nil: now): what was heard, and
    /// its override if one is active.
    func beaconReport(for key: OverrideKey, at time: Int64? = nil) -> BeaconReport? {
        eventLoop.preconditionInEventLoop()
        guard let entry = directory.entry(for: key) else { return nil }
        let now = time ?? clock.now()
        return BeaconReport(
            override: activeOverride(for: key, at: now), directory: entry,
            configuration: configuration, zoneNames: zoneNames, now: now)
    }
}

extension TrackStateHub {
    package struct HubCounters {
        package var signals = 0
        var rejectedFrames = 0
        /// Attendees' user beacons: counted apart, never fused.
        var userBeacons = 0
        package var published = 0
        /// Beacon updates the coalescer had no room for.
        package var beaconUpdatesDropped = 0
    }
}
