// The engine section (`--engine`): CircuitState's FusionEngine on one core.
//
// 1. Steady state: a venue of 64 circuit beacons (v1) and 8 staff devices (v2) repeating their
//    frames, one report every 100 µs; per report `ingest` then `evaluate(at:)`, as the daemon does.
//    The same with every report heard by two adapters (TwoAdapters.swift).
// 2. Flood: one report from each of N spoofed addresses (default 1,000,000) while one real red
//    flag beacon repeats every 1,000 reports; RSS, table bound and the published mode are checked.
import BLEPayload
import BenchmarkResults
import CircuitState
import Foundation

/// One pre-generated report: generation stays out of the timed region.
struct EngineInput {
    var signal: GeoRacingSignal
    var address: BluetoothAddress
    var rssi: Int8
    var time: Int64
}

enum EngineWorkload {
    static let start: Int64 = 1_767_225_600_000_000 // 2026-01-01T00:00:00Z, Unix µs
    static let step: Int64 = 100 // µs between reports

    /// 64 circuit beacons (zones 1...16, four per zone) and 8 staff devices, each repeating its
    /// frame with TTL 10 s; every `changeEvery` reports one device changes mode and bumps its sequence.
    static func venue(signals: Int, changeEvery: Int = 10_000) -> [EngineInput] {
        struct Device {
            var signal: GeoRacingSignal
            var address: BluetoothAddress
            var baseRSSI: Int
        }
        var generator = SplitMix64(seed: 0x0E9_61E)
        var devices: [Device] = []
        for index in 0..<64 {
            devices.append(
                Device(
                    signal: .circuit(
                        zone: UInt16(index % 16 + 1), mode: .normal,
                        sequence: UInt16(truncatingIfNeeded: generator.next()), ttl: 10,
                        temperature: index % 2 == 0 ? 21 : nil),
                    address: BluetoothAddress(rawValue: 0xC0DE_0000_0000 | UInt64(index)),
                    baseRSSI: -45 - Int(generator.next() % 35)))
        }
        for index in 0..<8 {
            devices.append(
                Device(
                    signal: .staff(
                        sourceID: 1000 + UInt32(index), zone: UInt16(generator.next() % 16 + 1), mode: .normal,
                        sequence: UInt16(truncatingIfNeeded: generator.next()), ttl: 10),
                    address: BluetoothAddress(rawValue: 0x5A_FF00_0000 | UInt64(index)),
                    baseRSSI: -50 - Int(generator.next() % 30)))
        }
        let modes: [GeoRacingMode] = [.normal, .safetyCar, .normal, .redFlag, .safetyCar, .normal]
        var inputs: [EngineInput] = []
        inputs.reserveCapacity(signals)
        for index in 0..<signals {
            if index > 0 && index % changeEvery == 0 {
                let changed = Int(generator.next() % UInt64(devices.count))
                devices[changed].signal.mode = modes[index / changeEvery % modes.count]
                devices[changed].signal.sequence &+= 1
            }
            let device = devices[Int(generator.next() % UInt64(devices.count))]
            let noise = Int(generator.next() % 13) - 6
            inputs.append(
                EngineInput(
                    signal: device.signal, address: device.address, rssi: Int8(clamping: device.baseRSSI + noise),
                    time: start + Int64(index) * step))
        }
        return inputs
    }

    static let realRedFlag = EngineInput(
        signal: .circuit(zone: 7, mode: .redFlag, sequence: 42, ttl: 10),
        address: BluetoothAddress(rawValue: 0xC0DE_0000_0007), rssi: -60, time: 0)

    /// `spoofed` reports, each from its own spoofed address (v1 and v2, normal / safety car / red flag
    /// and unknown mode bytes), with the real red flag beacon again as every 1000th report.
    /// Spoofed evacuations are left out: under the safety policy a spoofed evacuation rightly wins,
    /// which is an authentication question (allow list), not a memory one.
    static func flood(spoofed: Int, realEvery: Int = 1_000) -> [EngineInput] {
        var generator = SplitMix64(seed: 0xF100D)
        let modes: [GeoRacingMode] = [.normal, .safetyCar, .redFlag, .normal, .unknown(9), .safetyCar, .normal]
        var inputs: [EngineInput] = []
        inputs.reserveCapacity(spoofed + spoofed / (realEvery - 1) + 1)
        var index = 0
        var made = 0
        while made < spoofed {
            defer { index += 1 }
            let time = start + Int64(index) * step
            if index % realEvery == 0 {
                var real = realRedFlag
                real.rssi = Int8(clamping: -58 - Int(generator.next() % 5))
                real.time = time
                inputs.append(real)
                continue
            }
            made += 1
            let random = generator.next()
            let address = BluetoothAddress(rawValue: 0x4000_0000_0000 | UInt64(made)) // distinct per report
            let mode = modes[Int(random % UInt64(modes.count))]
            let sequence = UInt16(truncatingIfNeeded: random >> 16)
            let zone = UInt16(random >> 32 % 16 + 1)
            let signal: GeoRacingSignal =
                random >> 40 & 3 == 0
                ? .staff(
                    sourceID: UInt32(truncatingIfNeeded: random >> 8), zone: zone, mode: mode,
                    sequence: sequence, ttl: 10)
                : .circuit(zone: zone, mode: mode, sequence: sequence, ttl: 10)
            inputs.append(
                EngineInput(
                    signal: signal, address: address,
                    rssi: Int8(clamping: -40 - Int(random >> 48 % 45)), time: time))
        }
        return inputs
    }
}

/// Folds one decision into a word, so no evaluation can be optimized away.
@inline(__always)
func fold(_ state: PublishedState) -> Int {
    let mode = state.decision.mode.map { $0.severity + 1 } ?? 0
    let source =
        switch state.decision.source {
        case .beacon: 1
        case .remote: 2
        case .none: 3
        }
    return Int(state.decision.zone ?? 0) << 6 | mode << 3 | source << 1 | (state.changed ? 1 : 0)
}

@inline(__always)
func fold(_ outcome: IngestOutcome) -> Int {
    switch outcome {
    case .inserted: 1
    case .replaced: 2
    case .refreshed: 3
    case .cleared: 4
    case .ignoredOlder: 5
    case .filtered(let reason): 6 + (IngestFilter.allCases.firstIndex(of: reason) ?? 0)
    case .refused: 16
    case .contested(let started): started ? 17 : 18
    case .belowSigned: 19
    case .revised: 20 + SignatureRejection.allCases.count
    case .unverified(let reason): 20 + (SignatureRejection.allCases.firstIndex(of: reason) ?? 0)
    }
}

struct EngineTally: Equatable {
    var checksum = 0
    var changes = 0
    var finalMode: TrackMode?
    var finalOverrides = 0
}

/// The daemon's per-report path: ingest, then evaluate at the report's time.
@inline(never)
func ingestAndEvaluate(_ inputs: [EngineInput], configuration: FusionConfiguration) -> EngineTally {
    var engine = FusionEngine(configuration: configuration)
    var tally = EngineTally()
    inputs.withUnsafeBufferPointer { buffer in
        for input in buffer {
            engine.ingest(input.signal, address: input.address, rssi: input.rssi, at: input.time)
            let state = engine.evaluate(at: input.time)
            tally.checksum = tally.checksum &* 31 &+ fold(state)
            if state.changed { tally.changes += 1 }
        }
    }
    tally.finalMode = engine.evaluate(at: engine.clock).decision.mode
    tally.finalOverrides = engine.overrideCount
    return tally
}

@inline(never)
func ingestOnly(_ inputs: [EngineInput], configuration: FusionConfiguration) -> EngineTally {
    var engine = FusionEngine(configuration: configuration)
    var tally = EngineTally()
    inputs.withUnsafeBufferPointer { buffer in
        for input in buffer {
            let outcome = engine.ingest(input.signal, address: input.address, rssi: input.rssi, at: input.time)
            tally.checksum = tally.checksum &* 31 &+ fold(outcome)
        }
    }
    tally.finalMode = engine.evaluate(at: engine.clock).decision.mode
    tally.finalOverrides = engine.overrideCount
    return tally
}

/// Times `runs` passes of `body` after one untimed warm-up; every pass must agree with the warm-up.
func measureEngine(runs: Int, _ body: () -> EngineTally) -> (seconds: [Double], tally: EngineTally) {
    let reference = body()
    var seconds: [Double] = []
    for _ in 0..<runs {
        let started = monotonicSeconds()
        let tally = body()
        seconds.append(monotonicSeconds() - started)
        precondition(tally == reference, "engine passes disagree: \(tally) vs \(reference)")
    }
    return (seconds, reference)
}

struct FloodResult {
    var seconds: Double
    var tally = EngineTally()
    var rssBefore = 0, rssAtSample = 0, rssAfter = 0
    var sampleAt = 0
    var maxOverrides = 0
    var boundViolations = 0
    var finalDecision = Decision.undecided
    var counters = FusionCounters()
    var limit = 0
}

/// One flood pass, ingest and evaluate per report, with RSS read before, at `sampleAt` reports and at the end.
@inline(never)
func flood(_ inputs: [EngineInput], sampleAt: Int) -> FloodResult {
    let configuration = FusionConfiguration()
    var result = FloodResult(seconds: 0, limit: configuration.maxEntries)
    result.sampleAt = sampleAt
    result.rssBefore = residentBytes()
    var engine = FusionEngine(configuration: configuration)
    let started = monotonicSeconds()
    var sampleCost = 0.0
    inputs.withUnsafeBufferPointer { buffer in
        for (index, input) in buffer.enumerated() {
            engine.ingest(input.signal, address: input.address, rssi: input.rssi, at: input.time)
            let state = engine.evaluate(at: input.time)
            result.tally.checksum = result.tally.checksum &* 31 &+ fold(state)
            if state.changed { result.tally.changes += 1 }
            let count = engine.overrideCount
            if count > result.maxOverrides { result.maxOverrides = count }
            if count > engine.configuration.maxEntries { result.boundViolations += 1 }
            if index + 1 == sampleAt {
                let before = monotonicSeconds()
                result.rssAtSample = residentBytes()
                sampleCost = monotonicSeconds() - before
            }
        }
    }
    result.seconds = monotonicSeconds() - started - sampleCost
    result.rssAfter = residentBytes()
    let final = engine.evaluate(at: engine.clock)
    result.finalDecision = final.decision
    result.tally.finalMode = final.decision.mode
    result.tally.finalOverrides = engine.overrideCount
    result.counters = engine.counters
    return result
}

/// VmRSS of this process, in bytes (0 when /proc is not there).
func residentBytes() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
        let digits = line.dropFirst(6).filter(\.isNumber)
        return (Int(digits) ?? 0) * 1024
    }
    return 0
}

func runEngineBenchmark(_ options: Options) {
    let steady = EngineWorkload.venue(signals: options.engineSignals)
    let floodInputs = EngineWorkload.flood(spoofed: options.floodSignals)
    let configuration = FusionConfiguration()
    let signals = Double(steady.count)

    let full = measureEngine(runs: options.runs) { ingestAndEvaluate(steady, configuration: configuration) }
    let ingest = measureEngine(runs: options.runs) { ingestOnly(steady, configuration: configuration) }
    let payloads = EncodedPayloads(steady)
    let twoAdapters = measureEngine(runs: options.runs) {
        filterAndIngestTwoCopies(steady, payloads: payloads, configuration: configuration)
    }
    let flooded = flood(floodInputs, sampleAt: min(100_000, floodInputs.count))

    func best(_ seconds: [Double]) -> Double { seconds.min() ?? .nan }
    func median(_ seconds: [Double]) -> Double { Measurement(seconds: seconds, tally: DecodeTally()).median }
    func line(_ label: String, _ seconds: [Double]) -> String {
        padded(label) + "best " + rate(signals / best(seconds)) + " signals/s, median "
            + rate(signals / median(seconds))
            + String(
                format: " (%d runs; best %.1f ms, %.1f ns/signal)",
                seconds.count, best(seconds) * 1e3, best(seconds) / signals * 1e9)
    }

    print("engine:  FusionEngine, default configuration, one thread (pin it with taskset -c N)")
    print(
        "venue:   64 circuit beacons (v1, zones 1-16) + 8 staff (v2), \(steady.count) signals 100 µs apart, "
            + "TTL 10 s, a mode change every 10000; final \(full.tally.finalMode?.rawValue ?? "unknown"), "
                + """
                \(full.tally.finalOverrides) overrides, \(full.tally.changes) decision changes, checksum \
                \(full.tally.checksum)
                """
    )
    print(line("ingest+evaluate:", full.seconds))
    print(line("ingest only:", ingest.seconds))
    let twoAdapterRatio = best(twoAdapters.seconds) / best(ingest.seconds)
    print(line("two adapters:", twoAdapters.seconds))
    print(
        padded("") + "each signal heard by two adapters, filtered (AdapterCopyFilter), then ingested: "
            + "\(twoAdapters.tally.changes) of \(steady.count) second copies dropped; "
            + String(format: "%.2f× the time of one adapter's ingest only", twoAdapterRatio))
    let floodRate = Double(floodInputs.count) / flooded.seconds
    let growth = flooded.rssAfter - flooded.rssAtSample
    let counters = flooded.counters
    print(
        padded("flood:") + "\(options.floodSignals) distinct spoofed keys + real red flag every 1000th "
            + "(\(floodInputs.count) reports): " + rate(floodRate) + " signals/s"
            + String(
                format: " (ingest+evaluate, 1 run, %.1f ms, %.1f ns/signal)",
                flooded.seconds * 1e3, flooded.seconds / Double(floodInputs.count) * 1e9))
    print(
        padded("flood memory:") + "VmRSS " + megabytes(flooded.rssBefore) + " before, "
            + megabytes(flooded.rssAtSample) + " at \(flooded.sampleAt), " + megabytes(flooded.rssAfter)
            + " at end (" + String(format: "%+.1f MB", Double(growth) / 1e6) + " after \(flooded.sampleAt))")
    print(
        padded("flood table:") + "max \(flooded.maxOverrides) overrides (limit \(flooded.limit)), "
            + "\(flooded.boundViolations) over the limit; accepted \(counters.accepted), evicted \(counters.evicted), "
            + "refused \(counters.refused), expired \(counters.expired), unknown mode \(counters.filteredUnknownMode)")
    let decision = flooded.finalDecision
    print(
        padded("flood decision:") + "\(decision.modeName) (\(decision.source.rawValue)"
            + (decision.zone.map { ", zone \($0)" } ?? "") + "), checksum \(flooded.tally.checksum)")
    let target = 5e6
    let bestRate = signals / best(full.seconds)
    var figures = BenchmarkResults(section: "engine")
    figures.record("ingest_evaluate.best", bestRate, unit: "signals/s")
    figures.record("ingest_evaluate.median", signals / median(full.seconds), unit: "signals/s")
    figures.record("ingest_only.best", signals / best(ingest.seconds), unit: "signals/s")
    figures.record("ingest_only.median", signals / median(ingest.seconds), unit: "signals/s")
    figures.record("two_adapters.best", signals / best(twoAdapters.seconds), unit: "signals/s")
    figures.record("two_adapters.ratio_to_ingest_only", twoAdapterRatio, unit: "x")
    figures.record("flood.rate", floodRate, unit: "signals/s")
    figures.record("flood.growth_after_sample", Double(growth) / 1e6, unit: "MB")
    figures.record("flood.max_overrides", Double(flooded.maxOverrides), unit: "overrides")
    writeResults(figures, options: options)
    print(
        padded("target:") + "≥ 5 M signals/s: " + (bestRate >= target ? "met" : "missed")
            + ", flat memory (< 5 MB after \(flooded.sampleAt)): " + (growth < 5_000_000 ? "met" : "missed")
            + ", table bound: " + (flooded.boundViolations == 0 ? "met" : "missed")
            + ", real red flag published: " + (decision.mode == .redFlag ? "met" : "missed"))
}
