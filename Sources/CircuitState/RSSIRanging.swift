#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Distance from received power with the log-distance path loss model:
/// d = 10^((P1m − rssi) / (10·n)) metres.
public enum RSSIRanging {
    public static let defaultPathLossExponent = 2.7
    /// dBm at 1 m when neither configuration nor the advertiser says otherwise.
    public static let defaultReferencePower = -59.0
    /// Free-space loss over the first metre at 2.4 GHz, from the advertised TX power to P1m.
    public static let oneMetreLoss = 41.0
    /// The advertised TX powers (dBm) a BLE beacon plausibly uses. The value is the sender's own
    /// word: outside this range (−127 would put any RSSI at 0 m) it is not believed.
    public static let plausibleTXPower: ClosedRange<Int8> = -30...10

    /// P1m: the configured value for every beacon; else a plausible advertised TX power − 41 dB;
    /// else −59 dBm.
    public static func referencePower(configured: Double?, advertisedTXPower: Int8?) -> Double {
        if let configured { return configured }
        if let advertisedTXPower, plausibleTXPower.contains(advertisedTXPower) {
            return Double(advertisedTXPower) - oneMetreLoss
        }
        return defaultReferencePower
    }

    /// Metres; nil when the exponent is not a positive finite number.
    public static func distance(rssi: Double, referencePower: Double, pathLossExponent: Double) -> Double? {
        guard pathLossExponent > 0, pathLossExponent.isFinite else { return nil }
        return pow(10, (referencePower - rssi) / (10 * pathLossExponent))
    }

    /// The RSSI the model predicts at `distance` metres: the inverse of `distance`.
    public static func rssi(atDistance distance: Double, referencePower: Double, pathLossExponent: Double) -> Double {
        referencePower - 10 * pathLossExponent * log10(distance)
    }

    /// The mean of the last (up to) eight samples within a fence around their median;
    /// see `RSSIWindow.smoothedRSSI`.
    public static func robustMean(of samples: some Collection<Int8>) -> Double? {
        var window = RSSIWindow()
        for sample in samples.suffix(RSSIWindow.capacity) { window.append(sample) }
        return window.smoothedRSSI
    }
}

/// The last eight RSSI samples of one beacon.
public struct RSSIWindow: Sendable {
    public static let capacity = 8

    private var samples = InlineArray<8, Int8>(repeating: 0)
    private var next = 0
    public private(set) var count = 0

    public init() {}

    public mutating func append(_ rssi: Int8) {
        samples[next] = rssi
        next = (next + 1) % Self.capacity
        count = min(count + 1, Self.capacity)
    }

    public var values: [Int8] { (0..<count).map { samples[$0] } }

    /// dBm: the mean of the samples within a fence around their median; nil while empty.
    ///
    /// RSSI noise is a few dB either way, but fades and reflections add outliers of 10–30 dB,
    /// mostly downwards. The median ignores up to 3 of 8 such samples; the fence (twice the
    /// median absolute deviation, at least 5 dB) drops them, and averaging what is left keeps
    /// the low variance of a plain mean, which the median alone loses. Computed on the stack:
    /// it runs on every evaluation.
    public var smoothedRSSI: Double? {
        guard count > 0 else { return nil }
        var sorted = InlineArray<8, Double>(repeating: 0)
        for index in 0..<count { sorted[index] = Double(samples[index]) }
        Self.insertionSort(&sorted, count)
        let center = Self.median(sorted, count)
        var deviations = InlineArray<8, Double>(repeating: 0)
        for index in 0..<count { deviations[index] = abs(sorted[index] - center) }
        Self.insertionSort(&deviations, count)
        let fence = max(2 * Self.median(deviations, count), 5)
        var sum = 0.0
        var kept = 0
        for index in 0..<count where abs(sorted[index] - center) <= fence {
            sum += sorted[index]
            kept += 1
        }
        return kept == 0 ? center : sum / Double(kept)
    }

    private static func insertionSort(_ values: inout InlineArray<8, Double>, _ count: Int) {
        guard count > 1 else { return }
        for index in 1..<count {
            let value = values[index]
            var slot = index
            while slot > 0 && values[slot - 1] > value {
                values[slot] = values[slot - 1]
                slot -= 1
            }
            values[slot] = value
        }
    }

    private static func median(_ values: InlineArray<8, Double>, _ count: Int) -> Double {
        let middle = count / 2
        return count % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2
    }
}
