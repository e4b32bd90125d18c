import BenchmarkResults
import Glibc

/// Command-line options of `beacond-bench`.
struct Options {
    /// Folder of real captures to build the benchmark capture from.
    var shared = "../shared/captures"
    /// Advertising reports the benchmark capture holds.
    var reports = 224_220
    /// Where the benchmark capture is written.
    var out = "/tmp/beacond-bench.btsnoop"
    /// Timed decode runs per measurement (file, memory).
    var runs = 7
    /// Every Nth report carries a GeoRacing frame (0: none).
    var geoEvery = 10
    /// Decode `out` as it is instead of building it.
    var reuse = false
    /// Skip the tshark comparison.
    var skipTShark = false
    /// Only decode `out` (from the file) `runs` times and print the checksum: for profilers.
    var decodeOnly = false
    /// Run only the engine section (FusionEngine) instead of the decode section.
    var engine = false
    /// Reports in the engine section's steady venue workload.
    var engineSignals = 1_000_000
    /// Distinct spoofed addresses in the engine section's flood (plus the real beacon every 1000th report).
    var floodSignals = 1_000_000
    /// Also write the figures into this JSON file (section `decode` or `engine`).
    var results: String?
    /// The `beacond` whose `replay --all [--json]` the output section times (default: beside this executable).
    var beacond: String?
    /// Skip the output section.
    var skipOutput = false
    /// Only the output section (and tshark beside it): no decode timing.
    var outputOnly = false

    static let usage = """
        usage: beacond-bench [--shared DIR] [--reports N] [--out FILE] [--runs N] [--geo-every N]
                             [--reuse] [--no-tshark] [--decode-only] [--results JSON]
                             [--beacond PATH] [--no-output | --output-only]
               beacond-bench --engine [--runs N] [--signals N] [--flood N] [--results JSON]

          --shared DIR     real captures to build the benchmark capture from (default ../shared/captures)
          --reports N      advertising reports in the benchmark capture (default 224220)
          --out FILE       where the benchmark capture is written (default /tmp/beacond-bench.btsnoop)
          --runs N         timed runs per beacond measurement (default 7)
          --geo-every N    every Nth report carries a GeoRacing frame (default 10; 0: none)
          --reuse          decode FILE as it is; do not rebuild it
          --no-tshark      skip the tshark comparison
          --decode-only    decode FILE (implies --reuse, --no-tshark) and print a checksum; for profilers
          --engine         run only the engine section: FusionEngine ingest+evaluate throughput on a
                           venue workload, and a flood of distinct keys (memory, table bound, red flag)
          --signals N      reports in the engine's venue workload (default 1000000)
          --flood N        distinct spoofed addresses in the engine's flood (default 1000000)
          --results JSON   also write the figures into this file, as its "decode" or "engine" section
                           (and "output")
          --beacond PATH   the beacond whose whole `replay --all [--json] FILE > /dev/null` process the
                           output section times (default: the beacond beside this executable)
          --no-output      skip the output section
          --output-only    only the output section and tshark beside it (no decode timing)
        """

    static func parse(_ arguments: [String]) -> Options {
        var options = Options()
        var index = 0
        func value(_ name: String) -> String {
            index += 1
            guard index < arguments.count else { fail("\(name) needs a value") }
            return arguments[index]
        }
        func count(_ name: String, minimum: Int) -> Int {
            let text = value(name)
            guard let number = Int(text.replacingUnderscores()), number >= minimum else {
                fail("\(name): '\(text)' is not a whole number of at least \(minimum)")
            }
            return number
        }
        while index < arguments.count {
            let argument = arguments[index]
            switch argument {
            case "--shared": options.shared = value(argument)
            case "--reports": options.reports = count(argument, minimum: 1)
            case "--out": options.out = value(argument)
            case "--runs": options.runs = count(argument, minimum: 1)
            case "--geo-every": options.geoEvery = count(argument, minimum: 0)
            case "--reuse": options.reuse = true
            case "--no-tshark": options.skipTShark = true
            case "--decode-only":
                options.decodeOnly = true
                options.reuse = true
                options.skipTShark = true
            case "--engine": options.engine = true
            case "--signals": options.engineSignals = count(argument, minimum: 1)
            case "--flood": options.floodSignals = count(argument, minimum: 1)
            case "--results": options.results = value(argument)
            case "--beacond": options.beacond = value(argument)
            case "--no-output": options.skipOutput = true
            case "--output-only": options.outputOnly = true
            case "-h", "--help":
                print(usage)
                exit(0)
            default:
                fail("unknown argument '\(argument)'\n\(usage)")
            }
            index += 1
        }
        return options
    }
}

extension String {
    fileprivate func replacingUnderscores() -> String { String(filter { $0 != "_" && $0 != "," }) }
}

func fail(_ message: String) -> Never {
    writeError("beacond-bench: \(message)\n")
    exit(2)
}

func warn(_ message: String) {
    writeError("beacond-bench: \(message)\n")
}

func writeError(_ text: String) {
    var text = text
    text.withUTF8 { buffer in
        var offset = 0
        while offset < buffer.count {
            let written = write(2, buffer.baseAddress! + offset, buffer.count - offset)
            if written <= 0 { break }
            offset += written
        }
    }
}

/// CLOCK_MONOTONIC, in seconds.
@inline(__always)
func monotonicSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) * 1e-9
}

/// Writes `figures` to `--results`, when it was given; a failure is a warning, not lost figures.
func writeResults(_ figures: BenchmarkResults, options: Options) {
    guard let path = options.results else { return }
    do {
        try figures.write(to: path)
        print(padded("results:") + "written to \(path)")
    } catch {
        warn("cannot write \(path): \(error)")
    }
}
