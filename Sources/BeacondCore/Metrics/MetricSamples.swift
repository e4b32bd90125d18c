import CircuitState

/// One series' value at a scrape: a family, its labels (in a fixed order), and the value. Counters
/// carry their running total as the status reply counts it; `DaemonMetrics` turns totals into
/// increments of the swift-metrics counters.
package struct MetricSample: Hashable, Sendable {
    package struct Series: Hashable, Sendable {
        package let family: MetricFamily
        package let labels: [Label]

        package init(_ family: MetricFamily, _ labels: [Label] = []) {
            self.family = family
            self.labels = labels
        }
    }

    package struct Label: Hashable, Sendable {
        package let name: String
        package let value: String

        package init(_ name: String, _ value: String) {
            self.name = name
            self.value = value
        }
    }

    package let series: Series
    package let value: Double

    package init(_ family: MetricFamily, _ labels: [Label], _ value: Double) {
        series = Series(family, labels)
        self.value = value
    }

    package init(_ family: MetricFamily, _ labels: [Label], _ value: Int) {
        self.init(family, labels, Double(value))
    }

    package init(_ family: MetricFamily, _ value: Int) {
        self.init(family, [], Double(value))
    }
}

extension MetricSample {
    /// The samples a status message maps to: the same counters `beacond status` shows, so the two
    /// never disagree. Series whose part is absent (no socket server, no hci backend) read 0.
    package static func samples(from status: StatusMessage) -> [MetricSample] {
        typealias C = MetricCatalogue
        let counters = status.counters
        var samples: [MetricSample] = [
            MetricSample(C.buildInfo, [Label("version", status.version)], 1),
            MetricSample(C.uptime, [], max(0, status.uptime)),
        ]
        for mode in C.modeLabels {
            samples.append(MetricSample(C.trackMode, [Label("mode", mode)], status.state.mode == mode ? 1 : 0))
        }
        let totals: [MetricSample] = [
            MetricSample(C.stateChanges, counters.published),
            MetricSample(C.signalsReceived, counters.signals),
            MetricSample(C.signalsAccepted, counters.accepted),
            MetricSample(C.signalsRepeated, counters.repeats),
            MetricSample(C.signalsContested, counters.contestedFrames),
            MetricSample(C.userBeacons, counters.userBeacons ?? 0),
            MetricSample(C.overridesActive, counters.overrides),
            MetricSample(C.overridesExpired, counters.expired),
            MetricSample(C.overridesEvicted, counters.evicted),
            MetricSample(C.remoteFetches, counters.remoteFetches),
            MetricSample(C.remoteFailures, counters.remoteFailures),
        ]
        samples += totals
        let health: [MetricSample] = [
            MetricSample(C.remoteAge, [], status.remote?.age ?? .nan),
            MetricSample(C.remoteFresh, status.remote?.fresh == true ? 1 : 0),
            MetricSample(C.scannerUp, status.scanner.isScanning ? 1 : 0),
            MetricSample(C.scannerDegraded, status.scanner.state == .degraded ? 1 : 0),
            MetricSample(C.scannerRestarts, status.hci?.restarts ?? 0),
            MetricSample(C.reports, [Label("backend", status.scanner.backend)], reports(status)),
            MetricSample(C.signalsDropped, status.scan?.droppedSignals ?? 0),
            MetricSample(C.copiesDropped, status.scan?.copies?.dropped ?? 0),
            MetricSample(C.kernelFilter, status.hci?.kernelFilter?.state == "on" ? 1 : 0),
            MetricSample(C.kernelFilterProbes, status.hci?.kernelFilter?.probes ?? 0),
        ]
        samples += health
        // One series per adapter, from the daemon's start: its adapters are known by then (auto's
        // appear when found).
        for adapter in status.scanner.adapters {
            let labels = [Label("adapter", adapter.name)]
            samples.append(MetricSample(C.adapterUp, labels, adapter.state == .up ? 1 : 0))
            samples.append(MetricSample(C.adapterReports, labels, adapter.reports ?? 0))
            samples.append(MetricSample(C.adapterRestarts, labels, adapter.restarts ?? 0))
        }
        var rejected: [(String, Int)] = [
            ("invalid_frame", counters.rejectedFrames), ("older_sequence", counters.olderIgnored),
            ("rssi", counters.filteredRSSI), ("zone", counters.filteredZone), ("allow_list", counters.filteredAllow),
            ("distance", counters.filteredDistance), ("unknown_mode", counters.filteredUnknownMode),
            ("table_full", counters.refused), ("report_only", counters.filteredReportOnly ?? 0),
            ("unsigned", counters.filteredUnsigned ?? 0), ("below_signed", counters.belowSigned ?? 0),
        ]
        let signed = status.signed
        for reason in SignatureRejection.allCases {
            rejected.append((reason.rawValue, signed?.rejected[reason.rawValue] ?? 0))
        }
        for (reason, count) in rejected {
            samples.append(MetricSample(C.signalsRejected, [Label("reason", reason)], count))
        }
        let server = status.server ?? ServerStatus()
        let clients: [MetricSample] = [
            MetricSample(C.clientsConnected, server.clients),
            MetricSample(C.clientsRefused, server.rejectedClients),
            MetricSample(C.linesDropped, server.droppedLines),
            MetricSample(C.clientsDisconnected, [Label("reason", "slow")], server.disconnectedSlow),
            MetricSample(C.clientsDisconnected, [Label("reason", "abuse")], server.disconnectedAbuse),
            MetricSample(C.clientsDisconnected, [Label("reason", "evicted")], server.evictedClients),
        ]
        let mqtt: [MetricSample] = [
            MetricSample(C.mqttConnected, status.mqtt?.connected == true ? 1 : 0),
            MetricSample(C.mqttReconnects, status.mqtt?.reconnects ?? 0),
            MetricSample(C.mqttSightingsDropped, status.mqtt?.droppedSightings ?? 0),
        ]
        let beacon: [MetricSample] = [
            MetricSample(C.beaconAdvertising, status.beacon?.state == "advertising" ? 1 : 0),
            MetricSample(C.beaconFrames, status.beacon?.frames ?? 0),
        ]
        var verified = [MetricSample(C.signedAccepted, signed?.accepted ?? 0)]
        for sender in signed?.senders ?? [] {
            guard let offset = sender.clockOffset else { continue }
            verified.append(MetricSample(C.signedClockOffset, [Label("source", sender.source)], offset))
        }
        return samples + clients + mqtt + beacon + verified
    }

    /// What the backend received: the live sink's advertising reports, else the backend's own
    /// count, else (replay, which feeds the hub directly) the GeoRacing frames replayed.
    private static func reports(_ status: StatusMessage) -> Int {
        if let scan = status.scan { return scan.reports }
        if let hci = status.hci { return hci.reports }
        if let bluez = status.bluez { return bluez.reports }
        let (sum, overflow) = status.counters.signals.addingReportingOverflow(status.counters.rejectedFrames)
        return overflow ? .max : sum
    }
}
