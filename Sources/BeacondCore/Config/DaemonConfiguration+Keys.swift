import CircuitState
import Logging

extension DaemonConfiguration {
    /// Checks that need more than one key, once the file and the flags are both applied.
    func crossCheck() -> [ConfigurationProblem] {
        var problems: [ConfigurationProblem] = []
        if scanner.backend == .replay {
            if let replay = scanner.replay {
                do throws(ConfigValueProblem) {
                    try ConfigValueParser.checkReadable(replay, value: nil)
                } catch {
                    problems.append(origins.problem(.scannerReplay, reason: error.reason))
                }
            } else {
                var problem = origins.problem(
                    .scannerBackend, reason: "scanner.replay (--replay) is required when scanner.backend is replay")
                problem.key = ConfigKey.scannerReplay.rawValue
                problems.append(problem)
            }
        }
        if scanner.scanWindowMs > scanner.scanIntervalMs {
            problems.append(
                origins.problem(
                    .scannerScanWindow,
                    reason: "the scan window (\(scanner.scanWindowMs) ms) is longer than the scan interval "
                        + "(\(scanner.scanIntervalMs) ms, scanner.scan_interval_ms)"))
        }
        if record.path != nil, scanner.backend != .replay, scanner.adapters.names.count != 1 {
            problems.append(
                origins.problem(
                    .recordPath,
                    reason: "a recording holds one adapter's traffic, and scanner.adapter is "
                        + "\(scanner.adapters): record with one adapter"))
        }
        if scanner.backend == .bluez, scanner.adapters == .auto {
            problems.append(
                origins.problem(
                    .scannerAdapter, reason: "auto needs the hci backend; with bluez, name the adapters: [hci0, hci1]"))
        }
        if beacon.zone != nil, beacon.frameVersion.signs, security.keyFile == nil {
            problems.append(
                origins.problem(
                    .beaconFrameVersion,
                    reason: "frame version \(beacon.frameVersion.rawValue) signs frames: it needs security.key_file"))
        }
        return problems + mqttCrossCheck()
    }

    /// Throws every cross-key problem.
    func validate() throws(ConfigurationError) {
        let problems = crossCheck()
        if !problems.isEmpty { throw ConfigurationError(problems) }
    }
}
