import BLEPayload
import CircuitState
import Testing

@testable import BeacondCore

/// Why each zone stretch ended.
private func claimEnds(_ stretches: [RaceStretch]) -> [ClaimEnd] {
    stretches.compactMap {
        if case .claim(let detail) = $0.detail { return detail.end }
        return nil
    }
}

/// The daemon's history follows the engine through what the hub does: repeats, revised repeats
/// reloads and replay passes.
extension TrackStateHubTests {
    @Test func theHistoryShowsARevisedRepeatAtOnceAndAReloadsDropWhenItHappens() throws {
        try withHub { hub, _, clock in
            let start = clock.time
            let beacon = BluetoothAddress(rawValue: 0xC0FF_EE00_0010)
            let zone1 = { (mode: GeoRacingMode) in GeoRacingSignal.circuit(zone: 1, mode: mode, sequence: 7, ttl: 60) }
            hub.ingest(zone1(.yellowFlag), address: beacon, rssi: -60, txPower: nil)
            clock.time += 5 * Self.second
            hub.ingest(zone1(.yellowFlag), address: beacon, rssi: -60, txPower: nil)
            // The same sequence, now an evacuation: the engine revises the claim, and so does the history.
            clock.time += Self.second
            hub.ingest(zone1(.evacuation), address: beacon, rssi: -60, txPower: nil)
            #expect(hub.engine.counters.repeats == 2)

            // A reload admits only zone 2: the claim goes with it, not at its 60 s expiry.
            clock.time += 4 * Self.second
            var configuration = FusionConfiguration()
            configuration.zones = [2]
            hub.reconfigure(configuration)
            clock.time += 5 * Self.second
            hub.ingest(
                .circuit(zone: 2, mode: .normal, sequence: 1, ttl: 10), address: BluetoothAddress(rawValue: 2),
                rssi: -60,
                txPower: nil)

            let zone = hub.history.stretches.filter { $0.row == .zone(1) }
            #expect(zone.map(\.mode) == [.yellowFlag, .evacuation])
            #expect(zone.map { $0.start - start } == [0, 6 * Self.second])
            #expect(zone.map { $0.end - start } == [6 * Self.second, 10 * Self.second])
            #expect(claimEnds(zone) == [.replaced, .reconfigured])
        }
    }

    @Test func aReplayPassStartingAgainEndsTheHistorysClaimsThere() throws {
        try withHub { hub, _, clock in
            let start = clock.time
            let red = GeoRacingSignal.circuit(zone: 4, mode: .redFlag, sequence: 3, ttl: 60)
            hub.ingest(red, address: BluetoothAddress(rawValue: 4), rssi: -60, txPower: nil)
            clock.time += 3 * Self.second
            hub.clearOverrides()
            clock.time += 5 * Self.second
            hub.ingest(
                .circuit(zone: 5, mode: .normal, sequence: 1, ttl: 10), address: BluetoothAddress(rawValue: 5),
                rssi: -60,
                txPower: nil)
            let zone = hub.history.stretches.filter { $0.row == .zone(4) }
            #expect(zone.map { $0.end - start } == [3 * Self.second])
            #expect(claimEnds(zone) == [.recordingEnded])
        }
    }
}
