import CircuitState

/// What one publication is made of.
struct PublicationView {
    var state: PublishedState
    var directory: BeaconDirectory
    var configuration: FusionConfiguration
    /// `zones.names`: the hub's, kept out of the fusion engine.
    var zoneNames: ZoneNames = ZoneNames()
    var scanner: ScannerStatus
    var wallMicros: Int64
}

extension StateMessage {
    /// Publication `seq` of `view`; the beacon is the overriding one when the source is a beacon.
    init(seq: Int, view: PublicationView) {
        let state = view.state
        var beacon: BeaconReport?
        if state.source == .beacon, let override = state.override {
            beacon = BeaconReport(
                override: override, directory: view.directory.entry(for: override.key),
                configuration: view.configuration, zoneNames: view.zoneNames, now: state.time)
        }
        self.init(
            seq: seq, time: WallTime(micros: view.wallMicros), mode: state.decision.modeName,
            source: state.source.rawValue, zone: state.zone.map { Int($0) }, zoneName: view.zoneNames[state.zone],
            beacon: beacon,
            remote: state.remote.map(RemoteReport.init), scanner: view.scanner)
    }
}

extension BeaconReport {
    /// `override` is the engine's active entry for the key, if any; `directory` what was last
    /// heard from it; `configuration` gives the ranging model for a beacon that is not an
    /// override; `zoneNames` the name of a circuit beacon's zone. Nil when neither is known.
    init?(
        override: ActiveOverride?, directory: BeaconDirectory.Entry?, configuration: FusionConfiguration,
        zoneNames: ZoneNames = ZoneNames(), now: Int64
    ) {
        guard let key = override?.key ?? directory?.key, let signal = override?.signal ?? directory?.signal else {
            return nil
        }
        let heard = directory.flatMap {
            configuration.distance(smoothedRSSI: $0.window.smoothedRSSI, advertisedTXPower: $0.txPower)
        }
        // Differences in Double: engine times may sit at both ends of Int64 (a replayed capture).
        let ttlLeft = override.map { max(0, Double($0.expiresAt) - Double(now)) / 1_000_000 }
        let lastSeen = (directory?.lastSeen ?? override?.receivedAt).map {
            max(0, Double(now) - Double($0)) / 1_000_000
        }
        let kind =
            switch key {
            case .circuit: "circuit"
            case .staff: "staff"
            case .command: "command"
            }
        let isCircuit = kind == "circuit"
        // Only verified v3 frames reach the engine; a v3 frame the verifier turned away is rejected.
        let signed = signal.isSigned && (override != nil || directory?.rejection == nil)
        self.init(
            key: key.description, kind: kind, zone: Int(signal.zone),
            zoneName: isCircuit ? zoneNames[signal.zone] : nil, sourceID: signal.sourceID.map { Int($0) },
            address: key.address.description, mode: signal.mode.name,
            rssi: (directory?.rssi ?? override?.rssi).map { Int($0) }, distance: override?.distance ?? heard,
            sequence: Int(signal.sequence), ttl: Int(signal.ttl), active: override != nil,
            held: override?.heldClaim != nil, contested: override?.isContested ?? false, ttlLeft: ttlLeft,
            lastSeen: lastSeen, temperature: signal.temperature.map { Int($0) }, rejected: directory?.rejection,
            signed: signed)
    }
}
