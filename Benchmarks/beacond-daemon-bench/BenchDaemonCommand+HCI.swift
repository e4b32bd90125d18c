import BLEPayload
import BeacondCore
import BenchmarkResults

extension BenchDaemonCommand {
    /// The same path with the GeoRacing half as signed v3 frames, verified by the hub: the cost of
    /// verification per report, as a ratio to the v1 run just measured (issue 29).
    func signedHCIPath(reference: HCIPathBench.Result, figures: inout BenchmarkResults) throws {
        let signed = try HCIPathBench.run(rate: reference.rate, seconds: duration, signed: true)
        let (v1, v3) = (reference.paced, signed.paced)
        let ratio = v1.cpu > 0 ? v3.cpu / v1.cpu : 0
        let extraNanos = v1.delivered > 0 ? (v3.cpu - v1.cpu) / 100 * 1e9 / v1.deliveredRate : 0
        print(
            """
            hci path  signed v3 mix (half v3 from 50 transmitters, each verified once, the repeats compared; half \
            other devices), paced 1 ms: \(v3.delivered) of \(v3.expected) delivered, \(v3.ingested) signals; over \
            all phases \(signed.signatures.accepted) v3 accepted, \(signed.signatures.tagsComputed) tags computed, \
            \(signed.signatures.rejected.values.reduce(0, +)) rejected; CPU \
            \(String(format: "%.1f", v3.cpu)) % against \(String(format: "%.1f", v1.cpu)) % for v1: \
            ×\(String(format: "%.2f", ratio)), \(String(format: "%+.0f", extraNanos)) ns per report
            """
        )
        figures.record("hci.signed.paced.cpu", v3.cpu, unit: "%")
        figures.record("hci.signed.cpu_ratio_to_v1", ratio, unit: "x")
        figures.record("hci.signed.delivered_rate", v3.deliveredRate, unit: "reports/s")
    }
}

extension BenchDaemonCommand {
    /// The same path with the kernel filter off (`scanner.kernel_filter: false`, or a client
    /// looking at every device): every report read and decoded, as before issue 32.
    func unfilteredHCIPath(reference: HCIPathBench.Result, figures: inout BenchmarkResults) throws {
        let open = try HCIPathBench.run(rate: reference.rate, seconds: duration, kernelFilter: false)
        let (filtered, unfiltered) = (reference.paced, open.paced)
        let ratio = unfiltered.cpu > 0 ? filtered.cpu / unfiltered.cpu : 0
        print(
            """
            hci path  kernel filter off (every report read), paced 1 ms: \(unfiltered.delivered) of \
            \(unfiltered.expected) delivered; CPU: reader \(format(unfiltered.readerCPU, decimals: 1)) % + hub loop \
            \(format(unfiltered.loopCPU, decimals: 1)) % = \(format(unfiltered.cpu, decimals: 1)) %; the filter on: \
            \(format(filtered.cpu, decimals: 1)) % = ×\(format(ratio, decimals: 2))
            """
        )
        figures.record("hci.unfiltered.paced.cpu", unfiltered.cpu, unit: "%")
        figures.record("hci.filtered_over_unfiltered", ratio, unit: "x")
    }

    /// The floor: the same events and ticks with the kernel filter, the same wake-ups, no beacond work.
    func hciFloor(reference: HCIPathBench.Result, figures: inout BenchmarkResults) throws {
        let filter = HCIKernelFilter(companyID: GeoRacingSignal.defaultCompanyID, demand: AllDevicesDemand())
        let floor = try HCIFloorBench.run(
            events: HCIPathBench.events(), rate: reference.rate, seconds: duration, kernelFilter: filter)
        let ratio = floor.cpu > 0 ? reference.paced.cpu / floor.cpu : 0
        let perBurst = floor.bursts > 0 ? Double(floor.packets) / Double(floor.bursts) : 0
        print(
            """
            hci path  the floor (the kernel filter, poll, recvmmsg, an eventfd hop per burst, the pause, no beacond \
            work), paced 1 ms: \(floor.packets) packets in \(floor.bursts) bursts (\(format(perBurst, decimals: 1)) \
            per burst); CPU: reader \(format(floor.readerCPU, decimals: 1)) % + hop \
            \(format(floor.hopCPU, decimals: 1)) % = \(format(floor.cpu, decimals: 1)) %; beacond's path \
            \(format(reference.paced.cpu, decimals: 1)) % = ×\(format(ratio, decimals: 2)) the floor
            """
        )
        figures.record("hci.floor.paced.cpu", floor.cpu, unit: "%")
        figures.record("hci.over_floor", ratio, unit: "x")
    }

    /// The same path without the reader's pause after a burst: a wake-up per burst of whatever
    /// is queued, and one hop to the hub each.
    func unpausedHCIPath(reference: HCIPathBench.Result, figures: inout BenchmarkResults) throws {
        let eager = try HCIPathBench.run(rate: reference.rate, seconds: duration, burstPause: 0)
        let (paused, unpaused) = (reference.paced, eager.paced)
        let ratio = unpaused.cpu > 0 ? paused.cpu / unpaused.cpu : 0
        print(
            """
            hci path  no pause after a burst, paced 1 ms: \(format(unpaused.reportsPerBurst, decimals: 1)) reports \
            per burst; CPU: reader \(format(unpaused.readerCPU, decimals: 1)) % + hub loop \
            \(format(unpaused.loopCPU, decimals: 1)) % = \(format(unpaused.cpu, decimals: 1)) %; with the 1 ms pause: \
            \(format(paused.cpu, decimals: 1)) % = ×\(format(ratio, decimals: 2))
            """
        )
        figures.record("hci.unpaused.paced.cpu", unpaused.cpu, unit: "%")
        figures.record("hci.paused_over_unpaused", ratio, unit: "x")
    }
}

extension BenchDaemonCommand {
    /// The same path heard by two adapters at once, every event on both (issue 32): each adapter's
    /// reader reads its copy, the hub counts each advert once. As a ratio to one adapter in this run.
    func twoAdapterHCIPath(
        reference: HCIPathBench.Result, figures: inout BenchmarkResults, missed: inout [String]
    ) throws {
        let two = try HCIPathBench.run(rate: reference.rate, seconds: duration, adapters: 2)
        let (one, both) = (reference.paced, two.paced)
        print(
            """
            hci path  two adapters (every event on both; half GeoRacing from 50 beacons, half other devices), \
            paced 1 ms: \(both.delivered) of \(both.expected) delivered, \(both.ingested) signals ingested, \
            \(two.copiesDropped) copies dropped over all phases; CPU: readers \(format(both.readerCPU, decimals: 1)) % \
            + hub loop \(format(both.loopCPU, decimals: 1)) % = \(format(both.cpu, decimals: 1)) % of one core
            """
        )
        figures.record("hci.two_adapters.paced.cpu", both.cpu, unit: "%")
        figures.record("hci.two_adapters.delivered_rate", both.deliveredRate, unit: "reports/s")
        SpeedGoal.twoAdapters(cpu: both.cpu, oneAdapter: one.cpu)?.report(into: &figures, missed: &missed)
    }
}
