/// `status.server`: the socket server's counters (docs/protocol.md, "server").
package struct ServerStatus: Hashable, Sendable, Decodable {
    package var clients = 0
    package var maxClients = 0
    package var accepted = 0
    package var rejectedClients = 0
    package var evictedClients = 0
    package var droppedLines = 0
    package var coalescedStates = 0
    package var disconnectedSlow = 0
    package var disconnectedAbuse = 0
    package var errors = 0
    package var refusedStatus = 0
    package var queuedBytes = 0
    package var peakQueuedLines = 0
    package var peakQueuedBytes = 0

    enum CodingKeys: String, CodingKey {
        case clients
        case maxClients = "max_clients"
        case accepted
        case rejectedClients = "rejected_clients"
        case evictedClients = "evicted_clients"
        case droppedLines = "dropped_lines"
        case coalescedStates = "coalesced_states"
        case disconnectedSlow = "disconnected_slow"
        case disconnectedAbuse = "disconnected_abuse"
        case errors
        case refusedStatus = "refused_status"
        case queuedBytes = "queued_bytes"
        case peakQueuedLines = "peak_queued_lines"
        case peakQueuedBytes = "peak_queued_bytes"
    }

    package init() {}

    package func render(into writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("clients"); writer.int(clients)
        writer.key("max_clients"); writer.int(maxClients)
        writer.key("accepted"); writer.int(accepted)
        writer.key("rejected_clients"); writer.int(rejectedClients)
        writer.key("evicted_clients"); writer.int(evictedClients)
        writer.key("dropped_lines"); writer.int(droppedLines)
        writer.key("coalesced_states"); writer.int(coalescedStates)
        writer.key("disconnected_slow"); writer.int(disconnectedSlow)
        writer.key("disconnected_abuse"); writer.int(disconnectedAbuse)
        writer.key("errors"); writer.int(errors)
        writer.key("refused_status"); writer.int(refusedStatus)
        writer.key("queued_bytes"); writer.int(queuedBytes)
        writer.key("peak_queued_lines"); writer.int(peakQueuedLines)
        writer.key("peak_queued_bytes"); writer.int(peakQueuedBytes)
        writer.endObject()
    }
}

/// `status.scan`: what the live advertisement sinks received, over every adapter.
package struct ScanStatus: Hashable, Sendable, Decodable {
    package var reports: Int
    /// GeoRacing signals dropped because the hub's loop was too far behind.
    package var droppedSignals: Int
    /// With several adapters: the copies of one advert heard on more than one; absent otherwise.
    package var copies: CopyFilterStatus?

    enum CodingKeys: String, CodingKey {
        case reports
        case droppedSignals = "dropped_signals"
        case copies
    }

    package init(reports: Int, droppedSignals: Int, copies: CopyFilterStatus? = nil) {
        self.reports = reports
        self.droppedSignals = droppedSignals
        self.copies = copies
    }

    package func render(into writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("reports"); writer.int(reports)
        writer.key("dropped_signals"); writer.int(droppedSignals)
        if let copies { writer.key("copies"); copies.render(into: &writer) }
        writer.endObject()
    }
}

/// `status.scan.copies`: the filter that counts an advert heard on several adapters once
/// (docs/fusion.md, "Several adapters").
package struct CopyFilterStatus: Hashable, Sendable, Decodable {
    /// Signals passed to the engine.
    package var passed: Int
    /// Another adapter's copies of an advert already passed, dropped.
    package var dropped: Int
    /// Copies passed because they were stronger than the adapter's that had the advert.
    package var handovers: Int
    /// Entries overwritten for want of room (an advert's next copy then passes again).
    package var evictions: Int

    package init(passed: Int, dropped: Int, handovers: Int, evictions: Int) {
        self.passed = passed
        self.dropped = dropped
        self.handovers = handovers
        self.evictions = evictions
    }

    package func render(into writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("passed"); writer.int(passed)
        writer.key("dropped"); writer.int(dropped)
        writer.key("handovers"); writer.int(handovers)
        writer.key("evictions"); writer.int(evictions)
        writer.endObject()
    }
}

/// `status.hci`: the HCI backend's counters (`--backend hci`); with several adapters, their sums,
/// `adapter` naming them all ("hci1,hci2") and `mode` the first one's that is up.
package struct HCIBackendStatus: Hashable, Sendable, Decodable {
    package var adapter: String
    /// `legacy` or `extended`; nil while down.
    package var mode: String?
    package var events = 0
    package var reports = 0
    package var malformed = 0
    /// Why the last malformed event was skipped; absent when none was.
    package var lastMalformed: String?
    package var restarts = 0
    package var reconnects = 0
    /// With `--record`; absent otherwise.
    package var recording: RecordingStatus?
    /// With `scanner.kernel_filter` on; absent otherwise.
    package var kernelFilter: KernelFilterStatus?

    enum CodingKeys: String, CodingKey {
        case adapter, mode, events, reports, malformed
        case lastMalformed = "last_malformed"
        case restarts, reconnects, recording
        case kernelFilter = "kernel_filter"
    }

    package init(adapter: String, mode: String?) {
        self.adapter = adapter
        self.mode = mode
    }

    package func render(into writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("adapter"); writer.string(adapter)
        writer.key("mode"); writer.string(orNull: mode)
        writer.key("events"); writer.int(events)
        writer.key("reports"); writer.int(reports)
        writer.key("malformed"); writer.int(malformed)
        if let lastMalformed { writer.key("last_malformed"); writer.string(lastMalformed) }
        writer.key("restarts"); writer.int(restarts)
        writer.key("reconnects"); writer.int(reconnects)
        if let recording { writer.key("recording"); recording.render(into: &writer) }
        if let kernelFilter { writer.key("kernel_filter"); kernelFilter.render(into: &writer) }
        writer.endObject()
    }

    /// This adapter's counters and `other`'s, summed (`status.hci` over several adapters).
    package func adding(_ other: HCIBackendStatus) -> HCIBackendStatus {
        var sum = HCIBackendStatus(adapter: adapter + "," + other.adapter, mode: mode ?? other.mode)
        sum.events = events &+ other.events
        sum.reports = reports &+ other.reports
        sum.malformed = malformed &+ other.malformed
        sum.lastMalformed = other.lastMalformed ?? lastMalformed
        sum.restarts = restarts &+ other.restarts
        sum.reconnects = reconnects &+ other.reconnects
        sum.recording = recording ?? other.recording
        sum.kernelFilter =
            kernelFilter.map { mine in other.kernelFilter.map { mine.adding($0) } ?? mine }
            ?? other.kernelFilter
        return sum
    }
}

/// `status.hci.kernel_filter`: the HCI scanners' kernel filter (`scanner.kernel_filter`).
package struct KernelFilterStatus: Hashable, Sendable, Decodable {
    /// `on` (the kernel drops the reports that carry no GeoRacing frame), `lifted` (a client looks
    /// at every device), `probing` (the silence watchdog listens for any device), `off` (not
    /// connected) or `failed` (the kernel refused it: every report is read).
    package var state: String
    /// Times the silence watchdog lifted it to listen for any device, and times a look lifted it.
    package var probes: Int
    package var lifts: Int
    /// Why the kernel refused it; absent unless it did.
    package var failure: String?

    package init(state: String, probes: Int, lifts: Int, failure: String? = nil) {
        self.state = state
        self.probes = probes
        self.lifts = lifts
        self.failure = failure
    }

    package func render(into writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("state"); writer.string(state)
        writer.key("probes"); writer.int(probes)
        writer.key("lifts"); writer.int(lifts)
        if let failure { writer.key("failure"); writer.string(failure) }
        writer.endObject()
    }

    /// Two adapters' filters as one: the state of the one that reads more (an adapter not
    /// filtering shows), the counters summed.
    package func adding(_ other: KernelFilterStatus) -> KernelFilterStatus {
        KernelFilterStatus(
            state: state == "on" ? other.state : state, probes: probes &+ other.probes, lifts: lifts &+ other.lifts,
            failure: failure ?? other.failure)
    }
}

/// `status.hci.recording`: the btsnoop recorder (`--record`).
package struct RecordingStatus: Hashable, Sendable, Decodable {
    package var path: String
    package var active: Bool
    package var records: Int
    package var rotations: Int

    package init(path: String, active: Bool, records: Int, rotations: Int) {
        self.path = path
        self.active = active
        self.records = records
        self.rotations = rotations
    }

    package func render(into writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("path"); writer.string(path)
        writer.key("active"); writer.bool(active)
        writer.key("records"); writer.int(records)
        writer.key("rotations"); writer.int(rotations)
        writer.endObject()
    }
}

/// `status.bluez`: the bluez backend's counters (`--backend bluez`).
package struct BlueZStatus: Hashable, Sendable, Decodable {
    package var updates = 0
    package var reports = 0
    package var skippedProperties = 0
    package var malformedSignals = 0
    package var evictedDevices = 0
    /// Discovery restarts made because no advertisement monitor was active, and the failed ones.
    package var discoveryRefreshes = 0
    package var discoveryRefreshFailures = 0

    enum CodingKeys: String, CodingKey {
        case updates, reports
        case skippedProperties = "skipped_properties"
        case malformedSignals = "malformed_signals"
        case evictedDevices = "evicted_devices"
        case discoveryRefreshes = "discovery_refreshes"
        case discoveryRefreshFailures = "discovery_refresh_failures"
    }

    package init() {}

    /// The refresh counters are absent from daemons older than them: read as 0.
    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        updates = try container.decode(Int.self, forKey: .updates)
        reports = try container.decode(Int.self, forKey: .reports)
        skippedProperties = try container.decode(Int.self, forKey: .skippedProperties)
        malformedSignals = try container.decode(Int.self, forKey: .malformedSignals)
        evictedDevices = try container.decode(Int.self, forKey: .evictedDevices)
        discoveryRefreshes = try container.decodeIfPresent(Int.self, forKey: .discoveryRefreshes) ?? 0
        discoveryRefreshFailures = try container.decodeIfPresent(Int.self, forKey: .discoveryRefreshFailures) ?? 0
    }

    package func render(into writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("updates"); writer.int(updates)
        writer.key("reports"); writer.int(reports)
        writer.key("skipped_properties"); writer.int(skippedProperties)
        writer.key("malformed_signals"); writer.int(malformedSignals)
        writer.key("evicted_devices"); writer.int(evictedDevices)
        writer.key("discovery_refreshes"); writer.int(discoveryRefreshes)
        writer.key("discovery_refresh_failures"); writer.int(discoveryRefreshFailures)
        writer.endObject()
    }

    /// This adapter's counters and `other`'s, summed (`status.bluez` over several adapters).
    package func adding(_ other: BlueZStatus) -> BlueZStatus {
        var sum = BlueZStatus()
        sum.updates = updates &+ other.updates
        sum.reports = reports &+ other.reports
        sum.skippedProperties = skippedProperties &+ other.skippedProperties
        sum.malformedSignals = malformedSignals &+ other.malformedSignals
        sum.evictedDevices = evictedDevices &+ other.evictedDevices
        sum.discoveryRefreshes = discoveryRefreshes &+ other.discoveryRefreshes
        sum.discoveryRefreshFailures = discoveryRefreshFailures &+ other.discoveryRefreshFailures
        return sum
    }
}

/// `status.remote_poller`: the remote poller's health, with a remote URL. Times are wall-clock.
package struct RemotePollerStatus: Hashable, Sendable, Decodable {
    /// The URL without credentials.
    package var url: String?
    package var polls = 0
    package var successes = 0
    /// Failures by kind (`timeout`, `http_status`, …): every kind this version knows.
    package var failures: [String: Int] = [:]
    package var consecutiveFailures = 0
    package var lastError: String?
    package var lastErrorKind: String?
    package var lastErrorAt: WallTime?
    package var lastSuccessAt: WallTime?

    enum CodingKeys: String, CodingKey {
        case url, polls, successes, failures
        case consecutiveFailures = "consecutive_failures"
        case lastError = "last_error"
        case lastErrorKind = "last_error_kind"
        case lastErrorAt = "last_error_at"
        case lastSuccessAt = "last_success_at"
    }

    package init(url: String?) {
        self.url = url
    }

    /// `failures` in the order of `RemoteFailureKind.allCases`, then any other kind by name.
    package func render(into writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("url"); writer.string(orNull: url)
        writer.key("polls"); writer.int(polls)
        writer.key("successes"); writer.int(successes)
        writer.key("failures")
        writer.beginObject()
        let known = RemoteFailureKind.allCases.map(\.rawValue)
        for kind in known {
            if let count = failures[kind] { writer.key(kind); writer.int(count) }
        }
        for (kind, count) in failures.sorted(by: { $0.key < $1.key }) where !known.contains(kind) {
            writer.key(kind); writer.int(count)
        }
        writer.endObject()
        writer.key("consecutive_failures"); writer.int(consecutiveFailures)
        writer.key("last_error"); writer.string(orNull: lastError)
        writer.key("last_error_kind"); writer.string(orNull: lastErrorKind)
        writer.key("last_error_at"); writer.time(lastErrorAt)
        writer.key("last_success_at"); writer.time(lastSuccessAt)
        writer.endObject()
    }
}
