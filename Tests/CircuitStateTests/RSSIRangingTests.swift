import BLEPayload
import CircuitState
import Testing

@Suite struct RSSIRangingTests {
    @Test func logDistanceModel() throws {
        let one = try #require(RSSIRanging.distance(rssi: -59, referencePower: -59, pathLossExponent: 2.7))
        let ten = try #require(RSSIRanging.distance(rssi: -86, referencePower: -59, pathLossExponent: 2.7))
        let hundred = try #require(RSSIRanging.distance(rssi: -99, referencePower: -59, pathLossExponent: 2))
        #expect(abs(one - 1) < 1e-9)
        #expect(abs(ten - 10) < 1e-9)
        #expect(abs(hundred - 100) < 1e-9)
        #expect(RSSIRanging.distance(rssi: -60, referencePower: -59, pathLossExponent: 0) == nil)
        #expect(RSSIRanging.distance(rssi: -60, referencePower: -59, pathLossExponent: -2) == nil)
    }

    @Test func inverseModel() throws {
        for distance in [0.5, 1, 7.3, 42] {
            let rssi = RSSIRanging.rssi(atDistance: distance, referencePower: -62, pathLossExponent: 3.1)
            let back = try #require(RSSIRanging.distance(rssi: rssi, referencePower: -62, pathLossExponent: 3.1))
            #expect(abs(back - distance) < 1e-9 * distance)
        }
    }

    @Test func referencePowerComesFromConfigurationThenTXPowerThenDefault() {
        #expect(RSSIRanging.referencePower(configured: -65, advertisedTXPower: 4) == -65)
        #expect(RSSIRanging.referencePower(configured: nil, advertisedTXPower: 4) == -37)
        #expect(RSSIRanging.referencePower(configured: nil, advertisedTXPower: nil) == -59)
    }

    @Test func theEngineUsesTheAdvertisedTXPower() throws {
        var engine = FusionEngine()
        engine.circuit(.redFlag, rssi: -47, txPower: -6, at: 0)
        let distance = try #require(engine.activeOverrides(at: 0).first?.distance)
        #expect(abs(distance - 1) < 1e-9)
    }

    @Test func robustMeanDiscardsOutliers() throws {
        #expect(RSSIRanging.robustMean(of: [Int8]()) == nil)
        #expect(RSSIRanging.robustMean(of: [-70 as Int8]) == -70)
        let mean = try #require(RSSIRanging.robustMean(of: [-70, -70, -71, -69, -70, -95, -95, -40] as [Int8]))
        #expect(abs(mean - -70) < 0.01)
    }

    @Test func windowKeepsTheLastEightSamples() {
        var window = RSSIWindow()
        for rssi in Int8(-80)...(-70) { window.append(rssi) }
        #expect(window.count == 8)
        #expect(window.values.sorted() == Array(Int8(-77)...(-70)))
    }

    /// A deterministic trace at `distance`: uniform ±3 dB noise, a 12–27 dB fade with
    /// probability 0.2 and a 10–15 dB spike with probability 0.05. Returns each sample and
    /// whether it is clean.
    private func trace(distance: Double, seed: UInt64) -> [(rssi: Int8, isClean: Bool)] {
        var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
        func unit() -> Double {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Double(state >> 11) / Double(UInt64(1) << 53)
        }
        let expected = RSSIRanging.rssi(atDistance: distance, referencePower: -59, pathLossExponent: 2.7)
        return (0..<300).map { _ in
            var rssi = expected + unit() * 6 - 3
            let draw = unit()
            if draw < 0.2 { rssi -= 12 + unit() * 15 } else if draw < 0.25 { rssi += 10 + unit() * 5 }
            return (Int8(clamping: Int(rssi.rounded())), draw >= 0.25)
        }
    }

    private func metres(_ rssi: Double) -> Double {
        RSSIRanging.distance(rssi: rssi, referencePower: -59, pathLossExponent: 2.7) ?? .nan
    }

    @Test(arguments: [1.0, 3.0, 8.0, 20.0])
    func smoothedDistanceTracksTheTruthThroughOutliers(distance: Double) throws {
        let samples = trace(distance: distance, seed: UInt64(distance * 10))
        var window = RSSIWindow()
        var smoothedErrors: [Double] = []
        var plainErrors: [Double] = []
        for index in samples.indices {
            window.append(samples[index].rssi)
            guard index >= RSSIWindow.capacity - 1 else { continue }
            let smoothed = try #require(window.smoothedRSSI)
            let plain = Double(window.values.map(Int.init).reduce(0, +)) / Double(window.count)
            smoothedErrors.append(abs(metres(smoothed) / distance - 1))
            plainErrors.append(abs(metres(plain) / distance - 1))
            let recent = samples[(index - RSSIWindow.capacity + 1)...index]
            let clean = recent.filter(\.isClean).map { Double($0.rssi) }
            // Within the median's breakdown point the estimate stays with the clean samples' mean.
            if clean.count >= 5 {
                let oracle = clean.reduce(0, +) / Double(clean.count)
                #expect(abs(smoothed - oracle) < 2.5)
                #expect(smoothedErrors.last ?? 1 < 0.3)
            }
        }
        // Over the whole trace, windows with most samples faded included.
        let typicalSmoothedError = smoothedErrors.sorted()[smoothedErrors.count / 2]
        let typicalPlainError = plainErrors.sorted()[plainErrors.count / 2]
        #expect(typicalSmoothedError < 0.1)
        #expect(typicalPlainError > 0.25)
    }

    @Test func theEngineReportsTheSmoothedDistance() throws {
        var engine = FusionEngine()
        let expected = RSSIRanging.rssi(atDistance: 2, referencePower: -59, pathLossExponent: 2.7)
        let offsets: [Double] = [0, -1, 1, -18, 0, 2, -2, -21]
        for (index, offset) in offsets.enumerated() {
            engine.circuit(
                .redFlag, sequence: UInt16(index), rssi: Int8((expected + offset).rounded()), at: Int64(index))
        }
        let override = try #require(engine.activeOverrides(at: 8).first)
        let distance = try #require(override.distance)
        #expect(abs(distance / 2 - 1) < 0.1)
        #expect(override.rssi == Int8((expected - 21).rounded()))
    }
}
