// beacond-bench: beacond's capture decode path against tshark on one large btsnoop capture.
//
//   swift run -c release --scratch-path .build-bench beacond-bench [--shared DIR] [--reports N] [--out FILE]
//   swift run -c release --scratch-path .build-bench beacond-bench --engine   (the fusion engine; see Engine.swift)
//
// 1. Builds FILE (btsnoop 1002) from the HCI advertising reports of the real captures in DIR,
//    re-encoded by HCIEventEncoder and BTSnoopWriter, every Nth report carrying a GeoRacing frame.
// 2. Times CaptureReader + AdvertisingExtractor + GeoRacingDecoder over it, from the file and from memory.
// 3. Times `tshark -r FILE -T fields -e bthci_evt.bd_addr -e bthci_evt.rssi` over it.
// 4. Times the whole `beacond replay --all --json FILE > /dev/null` process and the table output
//    beside tshark (Output.swift).
import BLEPayload
import BenchmarkResults
import Foundation

func megabytes(_ bytes: Int) -> String { String(format: "%.1f MB", Double(bytes) / 1e6) }
func rate(_ perSecond: Double) -> String {
    perSecond >= 1e6 ? String(format: "%.2f M", perSecond / 1e6) : String(format: "%.3f M", perSecond / 1e6)
}
func padded(_ label: String) -> String { label.padding(toLength: 18, withPad: " ", startingAt: 0) }

func runBenchmark(_ options: Options) throws {
    // 1. The capture.
    if !options.reuse {
        let started = monotonicSeconds()
        let base: [OwnedAdvertisingReport]
        let source: String
        if let real = CaptureBuilder.realReports(in: options.shared) {
            base = real.reports
            source =
                "\(real.reports.count) distinct HCI advertising reports from \(options.shared): "
                + real.files.joined(separator: ", ")
        } else {
            print("note: no HCI captures found in \(options.shared); synthesizing every report with HCIEventEncoder")
            base = CaptureBuilder.syntheticReports()
            source = "\(base.count) synthetic reports (no captures at \(options.shared))"
        }
        let built = try CaptureBuilder.build(
            reports: options.reports, geoEvery: options.geoEvery, base: base, source: source)
        guard FileManager.default.createFile(atPath: options.out, contents: Data(built.bytes)) else {
            throw BenchError("cannot write \(options.out)")
        }
        print("source:  \(built.source)")
        print(
            String(
                format: "built:   %d reports (%d legacy, %d extended events; %d GeoRacing) in %.2f s",
                built.reports, built.legacy, built.extended, built.geoRacing, monotonicSeconds() - started))
    }

    let bytes: [UInt8]
    do {
        bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: options.out)))
    } catch {
        throw BenchError("cannot read \(options.out): \(error)")
    }

    if options.decodeOnly {
        var last = DecodeTally()
        let started = monotonicSeconds()
        for _ in 0..<options.runs { last = try decodeAll(try CaptureReader(path: options.out)) }
        let elapsed = monotonicSeconds() - started
        print(
            "decode-only: \(options.runs) passes, \(last.reports) reports each, \(last.signals) GeoRacing, "
                + "checksum \(last.checksum), " + rate(Double(last.reports * options.runs) / elapsed) + " reports/s")
        return
    }

    let path = options.out
    if options.outputOnly {
        let tally = try decodeAll(try CaptureReader(path: path))
        print("capture: \(path) (\(tally.reports) reports, \(megabytes(bytes.count)))")
        let tshark = measureTShark(options, path: path)
        if let note = tshark.1 { print(padded("tshark:") + note) }
        runOutputSection(reports: tally.reports, tshark: tshark, options: options)
        return
    }

    // 2. beacond.
    let fromFile = try measure(runs: options.runs) { () throws(CaptureError) in try CaptureReader(path: path) }
    let fromMemory = try measure(runs: options.runs) { () throws(CaptureError) in try CaptureReader(bytes: bytes) }
    precondition(fromFile.tally == fromMemory.tally, "file and memory decodes disagree")
    let tally = fromFile.tally
    let reports = Double(tally.reports)

    // 3. tshark.
    let (tshark, tsharkNote) = measureTShark(options, path: path)

    // 4. Side by side.
    print("capture: \(path) (\(tally.reports) reports, \(megabytes(bytes.count)))")
    print(
        "decoded: \(tally.records) records, \(tally.reports) reports, \(tally.signals) GeoRacing signals, "
            + "\(tally.rejected) rejected, \(tally.problems) record problems, checksum \(tally.checksum)")
    for (label, measurement) in [("beacond (file):", fromFile), ("beacond (memory):", fromMemory)] {
        print(
            padded(label) + "best " + rate(reports / measurement.best) + " reports/s, median "
                + rate(reports / measurement.median)
                + String(
                    format: " (%d runs; best %.1f ms, %.1f ns/report)",
                    measurement.seconds.count, measurement.best * 1e3, measurement.best / reports * 1e9))
    }
    if let tshark {
        print(
            padded(tshark.version + ":") + rate(Double(tshark.lines) / tshark.seconds)
                + String(format: " reports/s (%.2f s, %d lines)", tshark.seconds, tshark.lines))
        if tshark.lines != tally.reports || tshark.linesWithAddress != tally.reports {
            print(
                "warning: tshark printed \(tshark.lines) lines (\(tshark.linesWithAddress) with an address) "
                    + "for \(tally.reports) reports")
        }
        let speedUp = (reports / fromFile.best) / (Double(tshark.lines) / tshark.seconds)
        print(padded("speed-up:") + String(format: "%.0fx (beacond file best vs tshark)", speedUp))
    } else if let tsharkNote {
        print(padded("tshark:") + tsharkNote)
    }
    let target = 10e6
    let best = reports / fromFile.best
    var figures = BenchmarkResults(section: "decode")
    figures.record("file.best", best, unit: "reports/s")
    figures.record("file.median", reports / fromFile.median, unit: "reports/s")
    figures.record("memory.best", reports / fromMemory.best, unit: "reports/s")
    figures.record("memory.median", reports / fromMemory.median, unit: "reports/s")
    if let tshark {
        figures.record("tshark", Double(tshark.lines) / tshark.seconds, unit: "reports/s")
        figures.record("speed_up", best / (Double(tshark.lines) / tshark.seconds), unit: "x")
    }
    writeResults(figures, options: options)
    print(
        padded("target:") + "≥ 10 M reports/s: " + (best >= target ? "met" : "missed")
            + (tshark.map { t in
                ", ≥ 100x tshark: " + ((best / (Double(t.lines) / t.seconds)) >= 100 ? "met" : "missed")
            } ?? ""))

    // 5. The output path, beside the same tshark run.
    if !options.skipOutput {
        runOutputSection(reports: tally.reports, tshark: (tshark, tsharkNote), options: options)
    }
}

func measureTShark(_ options: Options, path: String) -> (TShark.Result?, String?) {
    if options.skipTShark { return (nil, "skipped (--no-tshark)") }
    guard let program = TShark.locate() else { return (nil, "not installed: skipped (apt-get install tshark)") }
    do { return (try TShark.measure(program, file: path), nil) } catch { return (nil, "failed: \(error)") }
}

func runOutputSection(reports: Int, tshark: (TShark.Result?, String?), options: Options) {
    guard let beacond = OutputBench.locate(options.beacond) else {
        print(
            padded("output:") + "skipped: no beacond at \(options.beacond ?? "this executable's folder") "
                + "(make release; then --beacond .build-release/release/beacond)")
        return
    }
    do {
        let result = try OutputBench.measure(beacond, file: options.out, runs: options.runs)
        OutputBench.report(result, reports: reports, tshark: tshark.0, options: options)
    } catch {
        warn("output section: \(error)")
    }
}

let options = Options.parse(Array(CommandLine.arguments.dropFirst()))
if options.engine {
    runEngineBenchmark(options)
    exit(0)
}
do {
    try runBenchmark(options)
} catch {
    fail("\(error)")
}
