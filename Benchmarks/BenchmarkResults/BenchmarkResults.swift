import Foundation

/// The figures one benchmark run prints, kept as numbers too, so `make bench` can leave them in
/// `.build/bench/results.json` for tools to compare. Each benchmark executable owns one section
/// of that file (`decode`, `engine`, `daemon`) and replaces only its own section when it writes.
public struct BenchmarkResults {
    public let section: String
    private var figures: [(name: String, value: Double, unit: String)] = []

    public init(section: String) {
        self.section = section
    }

    /// One figure: `name` is a stable dotted key (`latency.p99`), `unit` what the value counts
    /// (`ms`, `reports/s`, `%`, `KiB`).
    public mutating func record(_ name: String, _ value: Double, unit: String) {
        guard value.isFinite else { return }
        figures.removeAll { $0.name == name }
        figures.append((name, value, unit))
    }

    public var isEmpty: Bool { figures.isEmpty }

    /// Merges this section into the JSON object at `path` (created with its folder if missing):
    /// `{"decode": {"reports_per_second": {"value": 1.2e7, "unit": "reports/s"}, ...}, ...}`.
    public func write(to path: String) throws {
        let url = URL(fileURLWithPath: path)
        try FileManager.default.createDirectory(
            at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        var document: [String: Any] = [:]
        if let data = try? Data(contentsOf: url),
            let existing = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        {
            document = existing
        }
        var entries: [String: Any] = [:]
        for figure in figures {
            entries[figure.name] = ["value": figure.value, "unit": figure.unit]
        }
        document[section] = entries
        let data = try JSONSerialization.data(withJSONObject: document, options: [.prettyPrinted, .sortedKeys])
        try data.write(to: url, options: .atomic)
    }
}
