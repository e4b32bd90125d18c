import BLEPayload
import CircuitState
import Testing

/// The distance gate judges the sender's own word on its TX power only inside a plausible range,
/// and a configured P1m (`fusion.p1m_dbm`) overrides it for every beacon.
@Suite struct DistanceGateTests {
    /// −88 dBm with P1m −59 and n 2.7 is 11.9 m: beyond a 10 m gate.
    let gated = FusionConfiguration(maxDistance: 10)

    @Test(arguments: [Int8.min, -31, 11, 20, Int8.max])
    func anImplausibleTXPowerFallsBackToTheDefault(txPower: Int8) {
        var engine = FusionEngine(configuration: gated)
        #expect(engine.circuit(.normal, rssi: -88, txPower: nil, at: 0) == .filtered(.distance))
        #expect(engine.circuit(.evacuation, rssi: -88, txPower: txPower, at: 1) == .filtered(.distance))
        #expect(RSSIRanging.referencePower(configured: nil, advertisedTXPower: txPower) == -59)
        #expect(engine.overrideCount == 0)
    }

    @Test(arguments: [(txPower: Int8(-30), p1m: -71.0), (10, -31), (0, -41), (-12, -53)])
    func aPlausibleTXPowerIsUsed(txPower: Int8, p1m: Double) {
        #expect(RSSIRanging.referencePower(configured: nil, advertisedTXPower: txPower) == p1m)
    }

    @Test func aStrongAdvertisedTXPowerCanOnlyPushTheEstimateOutwards() {
        // +10 dBm means P1m −31: the same RSSI looks farther away, never nearer.
        var engine = FusionEngine(configuration: gated)
        #expect(engine.circuit(.redFlag, rssi: -80, txPower: nil, at: 0) == .inserted)
        #expect(
            engine.circuit(zone: 2, .redFlag, from: address(2), rssi: -80, txPower: 10, at: 0)
                == .filtered(.distance))
    }

    @Test func aConfiguredP1mIsUsedForEveryBeacon() throws {
        let configuration = FusionConfiguration(maxDistance: 10, referencePower: -70)
        var engine = FusionEngine(configuration: configuration)
        // −88 dBm with P1m −70: 4.6 m, whatever the frame claims about its TX power.
        #expect(engine.circuit(.redFlag, rssi: -88, txPower: -127, at: 0) == .inserted)
        #expect(engine.circuit(zone: 2, .redFlag, from: address(2), rssi: -88, txPower: 4, at: 0) == .inserted)
        let distances = engine.activeOverrides(at: 0).compactMap(\.distance)
        #expect(distances.count == 2)
        for distance in distances { #expect(abs(distance - 4.64) < 0.01) }
    }
}
