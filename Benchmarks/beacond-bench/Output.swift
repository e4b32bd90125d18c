// The output section: the whole `beacond replay --all --json FILE > /dev/null` process, and the
// table (`beacond replay --all FILE`), beside tshark's whole process on the same file in the same
// run (issue 15: ≥ 2 M reports/s for JSON, ≥ 1.5 M/s for the table).
import BenchmarkResults
import Foundation

enum OutputBench {
    static let jsonGoal = 2e6
    static let tableGoal = 1.5e6

    struct Result {
        var json: Measurement
        var table: Measurement
        /// Lines `replay --all --json` printed (into a pipe, once): one per report.
        var jsonLines: Int
        var jsonBytes: Int
        var loadBefore: String
        var loadAfter: String
    }

    /// The `beacond` to measure: `--beacond` (`make bench` passes the static release binary), else
    /// one beside this executable.
    static func locate(_ option: String?) -> String? {
        if let option { return FileManager.default.isExecutableFile(atPath: option) ? option : nil }
        let own = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        let sibling = own.deletingLastPathComponent().appendingPathComponent("beacond").path
        return FileManager.default.isExecutableFile(atPath: sibling) ? sibling : nil
    }

    /// The 1, 5 and 15 minute load averages: the machine is shared, so each run records its load.
    static func loadAverage() -> String {
        guard let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8) else { return "?" }
        return text.split(separator: " ").prefix(3).joined(separator: " ")
    }

    /// Times `runs` whole processes of each command (after one untimed warm-up), output to /dev/null.
    static func measure(_ beacond: String, file: String, runs: Int) throws -> Result {
        let loadBefore = loadAverage()
        let json = try timeProcess(beacond, ["replay", "--all", "--json", file], runs: runs)
        let table = try timeProcess(beacond, ["replay", "--all", file], runs: runs)
        let loadAfter = loadAverage()
        let output = try TShark.run(beacond, ["replay", "--all", "--json", file])
        guard output.status == 0 else { throw BenchError("beacond replay exited with status \(output.status)") }
        let lines = output.stdout.reduce(0) { $0 + ($1 == UInt8(ascii: "\n") ? 1 : 0) }
        return Result(
            json: json, table: table, jsonLines: lines, jsonBytes: output.stdout.count, loadBefore: loadBefore,
            loadAfter: loadAfter)
    }

    static func timeProcess(_ program: String, _ arguments: [String], runs: Int) throws -> Measurement {
        var seconds: [Double] = []
        for run in 0...runs {
            let started = monotonicSeconds()
            let status = try spawnAndWait(program, arguments)
            let elapsed = monotonicSeconds() - started
            guard status == 0 else {
                // Once more through pipes, for its error message.
                let result = try TShark.run(program, arguments, discardOutput: true)
                throw BenchError(
                    "\(program) \(arguments.joined(separator: " ")) exited with status \(status): "
                        + String(decoding: result.stderr.suffix(500), as: UTF8.self))
            }
            if run > 0 { seconds.append(elapsed) }
        }
        return Measurement(seconds: seconds, tally: DecodeTally())
    }

    /// Runs a program with its output to /dev/null and waits with waitpid(2). Not Foundation's
    /// `Process`: its `waitUntilExit` polls every 50 ms, which adds up to 50 ms to a 0.1 s run.
    static func spawnAndWait(_ program: String, _ arguments: [String]) throws -> Int32 {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv = ([program] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, program, &actions, nil, argv, environ)
        guard spawned == 0 else { throw BenchError("cannot start \(program): error \(spawned)") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw BenchError("waitpid(\(program)): error \(errno)") }
        }
        // WIFEXITED/WEXITSTATUS: the low 7 bits are the signal, the next 8 the exit status.
        return status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
    }

    /// Prints the section and records it as the results' `output` section.
    static func report(
        _ result: Result, reports: Int, tshark: TShark.Result?, options: Options
    ) {
        let count = Double(reports)
        let json = count / result.json.best
        let table = count / result.table.best
        let tsharkRate = tshark.map { Double($0.lines) / $0.seconds }
        print("output:  `beacond replay --all [--json] FILE > /dev/null`, whole process, best of \(options.runs)")
        print("load:    \(result.loadBefore) before, \(result.loadAfter) after (1, 5, 15 min)")
        func line(_ label: String, _ perSecond: Double, _ measurement: Measurement, goal: Double) {
            var text =
                padded(label) + rate(perSecond) + " reports/s, median " + rate(count / measurement.median)
                + String(format: " (best %.1f ms)", measurement.best * 1e3)
            if let tsharkRate { text += String(format: ", %.1fx tshark", perSecond / tsharkRate) }
            text +=
                "; goal ≥ " + String(format: "%.1f", goal / 1e6) + " M/s: " + (perSecond >= goal ? "met" : "missed")
            print(text)
        }
        line("replay --json:", json, result.json, goal: jsonGoal)
        line("replay (table):", table, result.table, goal: tableGoal)
        print(
            padded("json output:")
                + "\(result.jsonLines) lines, \(megabytes(result.jsonBytes)), "
                + String(format: "%.0f MB/s", Double(result.jsonBytes) / 1e6 / result.json.best))
        if result.jsonLines != reports {
            print("warning: replay --all --json printed \(result.jsonLines) lines for \(reports) reports")
        }
        if let tshark, let tsharkRate {
            print(
                padded(tshark.version + ":") + rate(tsharkRate)
                    + String(format: " reports/s (whole process, %.2f s)", tshark.seconds))
        }
        var figures = BenchmarkResults(section: "output")
        figures.record("json_reports_per_s", json, unit: "reports/s")
        figures.record("json_median_reports_per_s", count / result.json.median, unit: "reports/s")
        figures.record("json_mb_per_s", Double(result.jsonBytes) / 1e6 / result.json.best, unit: "MB/s")
        figures.record("table_reports_per_s", table, unit: "reports/s")
        figures.record("table_median_reports_per_s", count / result.table.median, unit: "reports/s")
        figures.record("json_goal_met", json >= jsonGoal ? 1 : 0, unit: "bool")
        figures.record("table_goal_met", table >= tableGoal ? 1 : 0, unit: "bool")
        if let tsharkRate {
            figures.record("tshark_reports_per_s", tsharkRate, unit: "reports/s")
            figures.record("json_vs_tshark", json / tsharkRate, unit: "x")
            figures.record("table_vs_tshark", table / tsharkRate, unit: "x")
        }
        if let load = Double(result.loadBefore.split(separator: " ").first ?? "") {
            figures.record("load_1m", load, unit: "load")
        }
        writeResults(figures, options: options)
    }
}
