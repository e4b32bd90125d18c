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

    public static func referencePower(configured: Double?, advertisedTXPower: Int8?) -> Double {
        if let configured { return configured }
        if let advertisedTXPower { return Double(advertisedTXPower) - oneMetreLoss }
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

    /// The mean of the samples within a fence around their median.
    ///
    /// RSSI noise is a few dB either way, but fades and reflections add outliers of 10–30 dB,
    /// mostly downwards. The median ignores up to 3 of 8 such samples; the fence (twice the
    /// median absolute deviation, at least 5 dB) drops them, and averaging what is left keeps
    /// the low variance of a plain mean, which the median alone loses.
    public static func robustMean(of samples: some Collection<Int8>) -> Double? {
        let sorted = samples.map(Double.init).sorted()
        guard let center = median(ofSorted: sorted) else { return nil }
        let deviations = sorted.map { abs($0 - center) }.sorted()
        let spread = median(ofSorted: deviations) ?? 0
        let fence = max(2 * spread, 5)
        let kept = sorted.filter { abs($0 - center) <= fence }
        guard !kept.isEmpty else { return center }
        return kept.reduce(0, +) / Double(kept.count)
    }

    private static func median(ofSorted values: [Double]) -> Double? {
        guard !values.isEmpty else { return nil }
        let middle = values.count / 2
        if values.count % 2 == 1 { return values[middle] }
        return (values[middle - 1] + values[middle]) / 2
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

    /// dBm, from `RSSIRanging.robustMean`; nil while empty.
    public var smoothedRSSI: Double? { RSSIRanging.robustMean(of: values) }
}
