import BenchmarkResults

/// Issues 15's and 16's goals for the daemon, each a ratio to a reference: the kernel alone in the
/// same run, the figure docs/benchmarks.md had before the issue, the budget, or the same run with MQTT off.
/// Printed with the goal, met or missed, and recorded under `goals.*` (the ratio, and `.met` 1 or 0).
struct SpeedGoal {
    /// The key under `goals.` in the results.
    var key: String
    var line: String
    var ratio: Double
    var met: Bool
    /// The issue that set the goal.
    var issue = 15

    /// The figures before issue 15 (docs/benchmarks.md, "Goals and current figures").
    static let previousFanOutP99Millis = 38.0
    static let previousHCICPUPercent = 15.6
    static let latencyOverKernelGoal = 1.3
    static let hciCPUGoalPercent = 8.0

    /// Report → last subscriber p99 against the kernel alone writing the same line to the same
    /// sockets with the same readers, in the same run: goal ≤ 1.3×.
    static func latency(lastSubscriber: BenchStats?, kernel: BenchStats?) -> SpeedGoal? {
        guard let lastSubscriber, let kernel, kernel.p99 > 0 else { return nil }
        let ratio = Double(lastSubscriber.p99) / Double(kernel.p99)
        let met = ratio <= latencyOverKernelGoal
        return SpeedGoal(
            key: "latency_over_kernel",
            line: """
                goal (issue 15): report → last subscriber p99 \(BenchStats.ms(lastSubscriber.p99)) / kernel \
                alone p99 \(BenchStats.ms(kernel.p99)) = \(format(ratio, decimals: 2))× (goal ≤ \
                \(format(latencyOverKernelGoal, decimals: 1))×): \(met ? "met" : "MISSED")
                """,
            ratio: ratio, met: met)
    }

    /// The fan-out's submit → read p99 against the figure before issue 15: goal half of it.
    static func fanOut(_ stats: BenchStats?, previousMillis: Double) -> SpeedGoal? {
        guard let stats, previousMillis > 0 else { return nil }
        let millis = Double(stats.p99) / 1e6
        let ratio = millis / previousMillis
        let met = ratio <= 0.5
        return SpeedGoal(
            key: "fanout_over_previous",
            line: """
                goal (issue 15): fan-out p99 \(format(millis, decimals: 1)) ms / before \
                \(format(previousMillis, decimals: 1)) ms = \(format(ratio, decimals: 2))× (goal: half, ≤ \
                \(format(previousMillis / 2, decimals: 1)) ms): \(met ? "met" : "MISSED")
                """,
            ratio: ratio, met: met)
    }

    /// The HCI path's CPU (reader thread + hub loop, paced in 1 ms ticks) against the figure
    /// before issue 15: goal ≤ 8 % of one core.
    static func hci(cpu: Double, rate: Int, previous: Double = previousHCICPUPercent) -> SpeedGoal? {
        guard cpu.isFinite, previous > 0 else { return nil }
        let ratio = cpu / previous
        let met = cpu <= hciCPUGoalPercent
        return SpeedGoal(
            key: "hci_cpu_over_previous",
            line: """
                goal (issue 15): HCI path at \(rate) reports/s \(format(cpu, decimals: 1)) % of one core / before \
                \(format(previous, decimals: 1)) % = \(format(ratio, decimals: 2))× (goal ≤ \
                \(format(hciCPUGoalPercent, decimals: 0)) %): \(met ? "met" : "MISSED")
                """,
            ratio: ratio, met: met)
    }

    /// Issue 32: two adapters hearing every report against one, in the same run: each reads its
    /// own copy, but the engine ingests each advert once, so the pair must cost less than twice.
    static let twoAdaptersGoalRatio = 2.0

    static func twoAdapters(cpu: Double, oneAdapter: Double) -> SpeedGoal? {
        guard cpu.isFinite, oneAdapter > 0 else { return nil }
        let ratio = cpu / oneAdapter
        let met = ratio < twoAdaptersGoalRatio
        return SpeedGoal(
            key: "hci_two_adapters_over_one",
            line: """
                goal (issue 32): HCI path with two adapters \(format(cpu, decimals: 1)) % of one core / one \
                adapter \(format(oneAdapter, decimals: 1)) % = \(format(ratio, decimals: 2))× (goal < \
                \(format(twoAdaptersGoalRatio, decimals: 0))×): \(met ? "met" : "MISSED")
                """,
            ratio: ratio, met: met, issue: 32)
    }

    static let mqttAddedCPUGoalPercent = 5.0
    static let mqttLatencyTolerance = 0.10

    /// Issue 16: the CPU that 1,000 state changes per second to the broker add (the counted process, MQTT
    /// on − off, % of one core): goal < 5 %, and only if the states reached the broker. The line also
    /// gives MQTT's own share (its threads and its observers on the hub's loop); the rest is what its
    /// work costs the other threads (caches, wake-ups, two cores shared with the broker). Recorded: the
    /// share of the budget.
    static func mqttCPU(addedPercent: Double, attributedPercent: Double, delivered: Bool) -> SpeedGoal? {
        guard addedPercent.isFinite else { return nil }
        let met = addedPercent < mqttAddedCPUGoalPercent && delivered
        return SpeedGoal(
            key: "mqtt_added_cpu",
            line: """
                goal (issue 16): 1,000 state changes/s to the broker add \(format(addedPercent, decimals: 2)) % \
                of one core, of which MQTT's threads and loop hooks \(format(attributedPercent, decimals: 2)) % \
                (goal < \(format(mqttAddedCPUGoalPercent, decimals: 0)) %)\
                \(delivered ? "" : ", but the states did not all reach the broker"): \(met ? "met" : "MISSED")
                """,
            ratio: addedPercent / mqttAddedCPUGoalPercent, met: met, issue: 16)
    }

    /// Issue 16: report → last subscriber p99 with MQTT on against off (means over the rounds): unchanged
    /// within noise, |on − off| ≤ max(noise, 10 % of off), noise the spread (max − min) of the off rounds.
    static func mqttLatency(onMillis: Double, offMillis: Double, noiseMillis: Double, delivered: Bool) -> SpeedGoal? {
        guard onMillis.isFinite, offMillis.isFinite, noiseMillis.isFinite, offMillis > 0 else { return nil }
        let allowed = max(noiseMillis, offMillis * mqttLatencyTolerance)
        let met = abs(onMillis - offMillis) <= allowed && delivered
        return SpeedGoal(
            key: "mqtt_latency_on_over_off",
            line: """
                goal (issue 16): socket p99 with MQTT on \(format(onMillis, decimals: 3)) ms vs off \
                \(format(offMillis, decimals: 3)) ms: |on − off| \(format(abs(onMillis - offMillis), decimals: 3)) \
                ms (goal ≤ max(noise \(format(noiseMillis, decimals: 3)) ms, 10 % of off) = \
                \(format(allowed, decimals: 3)) ms)\
                \(delivered ? "" : ", but the states did not all reach the broker"): \(met ? "met" : "MISSED")
                """,
            ratio: onMillis / offMillis, met: met, issue: 16)
    }

    /// Prints the goal's line (indented like the run's) and records it; appends to `missed` when missed.
    func report(into figures: inout BenchmarkResults, missed: inout [String]) {
        print("          " + line)
        figures.record("goals.\(key)", ratio, unit: "x")
        figures.record("goals.\(key).met", met ? 1 : 0, unit: "bool")
        if !met { missed.append("issue \(issue) \(key)") }
    }
}
