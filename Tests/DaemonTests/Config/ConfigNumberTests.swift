import BeacondTestSupport
import CircuitState
import Testing

@testable import BeacondClient
@testable import BeacondCore
@testable import beacond

/// Every number a config file or a flag carries, at its extremes: a clear error naming the place,
/// never a trap, never a value outside the documented range.
@Suite struct ConfigNumberTests {
    /// Numbers that overflowed, trapped or slipped through before issue 9, and their neighbours.
    static let extremes = [
        "9223372036854.775808", "9223372036854.775807", "9223372036854", "9223372036855",
        "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
        "99999999999999999999999999999999999999", "0x7FFFFFFFFFFFFFFF", "0x8000000000000000",
        "-0x8000000000000000", "-0x8000000000000001", "0xFFFFFFFFFFFFFFFFFF", "-0x10", "-0", "+0", "-0.0",
        "1e400", "-1e400", "1e-400", "1e308", "nan", "NaN", "inf", "-inf", "infinity", "0x1p3", "1.0000001",
        "0.0000001", "1.", ".", "", "--1", "+-1", "1_000", "١٢", String(repeating: "9", count: 5000),
    ]

    static let durationKeys = ConfigKey.allCases.filter { $0.durationRange != nil }

    // MARK: the one duration parser

    @Test(arguments: [
        ("0", Result<Int64, DecimalMillionths.Problem>.success(0)),
        ("2.5", .success(2_500_000)), (".5", .success(500_000)), ("+7", .success(7_000_000)),
        ("0.000001", .success(1)), ("9223372036854.775807", .success(Int64.max)),
        ("9223372036854.775808", .failure(.tooLarge)), ("9223372036855", .failure(.tooLarge)),
        ("99999999999999999999999", .failure(.tooLarge)), ("-1", .failure(.negative)), ("-0", .failure(.negative)),
        ("-x", .failure(.notANumber)), ("1.0000001", .failure(.tooManyDecimals)), ("1e3", .failure(.notANumber)),
        ("nan", .failure(.notANumber)), ("0x10", .failure(.notANumber)), ("", .failure(.notANumber)),
        ("1.", .failure(.notANumber)), ("١", .failure(.notANumber)),
    ])
    func decimalMillionthsParsesExactlyOrSaysWhy(text: String, expected: Result<Int64, DecimalMillionths.Problem>) {
        #expect(DecimalMillionths.parse(text) == expected)
    }

    @Test func theIssuesDurationIsAnErrorInEveryDurationKey() {
        let scratch = ConfigScratch()
        for key in Self.durationKeys {
            let parts = key.rawValue.split(separator: ".")
            let yaml =
                parts.count == 2
                ? "\(parts[0]):\n  \(parts[1]): 9223372036854.775808\n" : "\(key.rawValue): 9223372036854.775808\n"
            var problems: [ConfigurationProblem] = []
            if key.reader == .daemon {
                problems = scratch.problems(yaml)
            } else {
                do {
                    _ = try KioskSettings.load(path: scratch.write("beacond.yaml", yaml))
                } catch {
                    problems = error.problems
                }
            }
            #expect(problems.count == 1)
            let problem = problems.first
            #expect(problem?.key == key.rawValue)
            #expect(problem?.line == 2)
            #expect(problem?.file == scratch.directory + "/beacond.yaml")
            if let range = key.durationRange {
                #expect(problem?.reason == "must be \(range.text), found 9223372036854.775808")
            }
        }
    }

    @Test func durationRangesAreTheDocumentedOnes() {
        #expect(DurationRange.silenceRestart.text == "0 (off) or between 1 and 86400 seconds")
        #expect(DurationRange.pollInterval.text == "between 0.1 and 3600 seconds")
        #expect(DurationRange.timeout.text == "between 0.1 and 300 seconds")
        #expect(DurationRange.staleAfter.text == "between 0.1 and 86400 seconds")
        #expect(DurationRange.maxTTL.text == "between 0.1 and 86400 seconds")
        #expect(DurationRange.deescalationHold.text == "between 0.1 and 10 seconds")
        #expect(DurationRange.blueZRefresh.text == "0 (off) or between 1 and 3600 seconds")
        #expect(DurationRange.beaconInterval.text == "between 0.02 and 10.24 seconds")
        #expect(DurationRange.clockWindow.text == "between 1 and 3600 seconds")
        #expect(DurationRange.languagePeriod.text == "between 1 and 60 seconds")
        #expect(DurationRange.speakRepeat.text == "between 1 and 3600 seconds")
        #expect(Self.durationKeys.count == 11)
    }

    @Test func durationBoundsAreInclusive() throws {
        var configuration = DaemonConfiguration()
        try configuration.set(.remoteTimeout, to: .flag("0.1"), relativeTo: nil)
        #expect(configuration.remote.timeout == 100_000)
        try configuration.set(.remoteTimeout, to: .flag("300"), relativeTo: nil)
        #expect(configuration.remote.timeout == 300_000_000)
        try configuration.set(.scannerSilenceRestart, to: .flag("0"), relativeTo: nil)
        #expect(configuration.scanner.silenceRestart == 0)
        #expect(throws: ConfigValueProblem.self) {
            try configuration.set(.scannerSilenceRestart, to: .flag("0.5"), relativeTo: nil)
        }
        #expect(throws: ConfigValueProblem.self) {
            try configuration.set(.remoteTimeout, to: .flag("300.000001"), relativeTo: nil)
        }
    }

    // MARK: every numeric key, from the file and as a flag

    static let numericKeys: [ConfigKey] = [
        .scannerCompanyID, .scannerSpeed, .scannerSilenceRestart, .scannerScanInterval, .scannerScanWindow,
        .remotePollInterval, .remoteTimeout, .remoteStaleAfter, .fusionMinRSSI, .fusionZones, .fusionMaxTTL,
        .fusionDeescalationHold, .fusionAllow, .fusionMaxDistance, .fusionReferencePower, .fusionMaxEntries,
        .socketMaxClients, .recordMaxMB, .recordKeep,
    ]

    /// Each extreme is refused, or accepted as a value inside the documented range.
    @Test(arguments: numericKeys)
    func extremesAreRefusedOrInRange(key: ConfigKey) {
        for text in Self.extremes {
            var configuration = DaemonConfiguration()
            do throws(ConfigValueProblem) {
                try configuration.set(key, to: .flag(text), relativeTo: nil)
                #expect(Self.isInRange(configuration, key), "\(key.rawValue) accepted \(text) out of range")
            } catch {
                #expect(!error.reason.isEmpty)
                #expect(error.reason.utf8.count < 200, "\(key.rawValue): the message repeats a huge value")
            }
        }
    }

    /// A deterministic stream of number-like junk through every numeric key: nothing traps, and
    /// whatever is accepted is in range.
    @Test func numberLikeJunkNeverTrapsAndNeverLeavesTheRange() {
        var generator = SplitMix64(seed: 9)
        let alphabet = Array("0123456789012345678901234567890.-+xXeEnaif, ")
        for _ in 0..<500 {
            let length = Int(generator.next() % 28)
            let text = String((0..<length).map { _ in alphabet[Int(generator.next() % UInt64(alphabet.count))] })
            for key in Self.numericKeys {
                var configuration = DaemonConfiguration()
                if (try? configuration.set(key, to: .flag(text), relativeTo: nil)) != nil {
                    #expect(Self.isInRange(configuration, key), "\(key.rawValue) accepted \(text) out of range")
                }
            }
        }
    }

    static func isInRange(_ configuration: DaemonConfiguration, _ key: ConfigKey) -> Bool {
        if let range = key.durationRange {
            let micros: Int64 =
                switch key {
                case .scannerSilenceRestart: configuration.scanner.silenceRestart
                case .scannerBlueZRefresh: configuration.scanner.blueZRefresh
                case .remotePollInterval: configuration.remote.pollInterval
                case .remoteTimeout: configuration.remote.timeout
                case .remoteStaleAfter: configuration.remote.staleAfter
                case .fusionMaxTTL: configuration.fusion.maxTTL
                default: configuration.fusion.deescalationHold
                }
            return range.contains(micros)
        }
        switch key {
        case .scannerSpeed:
            if case .factor(let millionths) = configuration.scanner.speed {
                return millionths > 0 && millionths <= ReplaySpeed.maxFactorMillionths
            }
            return true
        case .scannerScanInterval:
            return DaemonConfiguration.Scanner.scanTimingRange
                .contains(configuration.scanner.scanIntervalMs)
        case .scannerScanWindow:
            return DaemonConfiguration.Scanner.scanTimingRange
                .contains(configuration.scanner.scanWindowMs)
        case .fusionMinRSSI: return (-127...20).contains(configuration.fusion.minRSSI)
        case .fusionMaxDistance:
            return configuration.fusion.maxDistance.map(ConfigValueParser.metresRange.contains)
                ?? false
        case .fusionReferencePower:
            guard let power = configuration.fusion.referencePower else { return false }
            return ConfigValueParser.referencePowerRange.contains(power) && !(power == 0 && power.sign == .minus)
        case .fusionMaxEntries: return (1...1_000_000).contains(configuration.fusion.maxEntries)
        case .socketMaxClients: return (1...1_000_000).contains(configuration.socket.maxClients)
        case .recordMaxMB: return (1...1_000_000).contains(configuration.record.maxMB)
        case .recordKeep: return (0...1000).contains(configuration.record.keep)
        default: return true // company id, zones and source ids: their types hold exactly their range
        }
    }

    @Test(arguments: [
        (
            "scanner:\n  company_id: 99999999999999999999\n", "scanner.company_id",
            "must be between 0 and 65535, found 99999999999999999999"
        ),
        ("scanner:\n  company_id: -0x1\n", "scanner.company_id", "must be between 0 and 65535, found -0x1"),
        (
            "fusion:\n  min_rssi: -9223372036854775809\n", "fusion.min_rssi",
            "must be between -127 and 20, found -9223372036854775809"
        ),
        ("fusion:\n  zones: [1, 65536]\n", "fusion.zones", "entry 2: zone 65536 is outside 0...65535"),
        ("fusion:\n  allow: [4294967296]\n", "fusion.allow", "entry 1: source id 4294967296 is outside 0...4294967295"),
        (
            "fusion:\n  max_distance_m: 1e400\n", "fusion.max_distance_m",
            "must be between 0.1 and 1000 metres, found 1e400"
        ),
        (
            "fusion:\n  max_distance_m: nan\n", "fusion.max_distance_m",
            "expected a distance in metres, found \"nan\""
        ),
        ("fusion:\n  p1m_dbm: -1e400\n", "fusion.p1m_dbm", "must be between -100 and 0 dBm, found -1e400"),
        ("fusion:\n  p1m_dbm: 0x10\n", "fusion.p1m_dbm", "expected a power in dBm (like -59), found \"0x10\""),
        (
            "scanner:\n  speed: 1e400\n", "scanner.speed",
            "expected a positive number (1 is real time) or max, found \"1e400\""
        ),
        (
            "scanner:\n  speed: 9223372036854.775808\n", "scanner.speed",
            "must be at most 10000 (use max to skip waiting), found 9223372036854.775808"
        ),
        (
            "scanner:\n  scan_interval_ms: 0x7FFFFFFFFFFFFFFFF\n", "scanner.scan_interval_ms",
            "must be between 3 and 10240, found 0x7FFFFFFFFFFFFFFFF"
        ),
        (
            "record:\n  max_mb: 18446744073709551616\n", "record.max_mb",
            "must be between 1 and 1000000, found 18446744073709551616"
        ),
        ("remote:\n  timeout: -0\n", "remote.timeout", "must not be negative, found -0"),
    ])
    func outOfRangeNamesFileLineKeyAndRange(yaml: String, key: String, reason: String) {
        let scratch = ConfigScratch()
        let problems = scratch.problems(yaml)
        #expect(problems.map(\.key) == [key])
        #expect(problems.first?.line == 2)
        #expect(problems.first?.reason == reason)
        #expect(problems.first?.description.hasPrefix(scratch.directory + "/beacond.yaml:2:") == true)
    }

    @Test func aHugeValueIsShortenedInTheMessage() {
        let digits = String(repeating: "7", count: 10_000)
        let problems = ConfigScratch().problems("remote:\n  timeout: \(digits)\n")
        #expect(problems.first?.reason.hasSuffix("…\"") == true)
        #expect((problems.first?.reason.count ?? .max) < 150)
    }

    // MARK: flags: the same rules, exit 64

    @Test func aBadFlagIsBadUsageAndABadFileIsBadConfiguration() throws {
        do {
            _ = try DaemonOverrides(timeout: "9223372036854.775808").applied(to: DaemonConfiguration())
            Issue.record("accepted the issue's duration as --timeout")
        } catch {
            #expect(error.exitCode == 64)
            #expect(
                error.description
                    == "--timeout (remote.timeout): must be between 0.1 and 300 seconds, found 9223372036854.775808")
        }
        let scratch = ConfigScratch()
        do {
            _ = try scratch.load("fusion:\n  max_ttl: 1e400\n", overrides: DaemonOverrides(minRSSI: "-300"))
            Issue.record("accepted a bad file")
        } catch let error as ConfigurationError {
            #expect(error.exitCode == 78)
        }
    }

    @Test func replayFlagsUseTheSameRules() throws {
        #expect(throws: FlagValueError.self) { try SecondsArgument.parser(.maxTTL)("9223372036854.775808") }
        #expect(throws: FlagValueError.self) { try SecondsArgument.parser(.deescalationHold)("10.000001") }
        #expect(try SecondsArgument.parser(.deescalationHold)("2.5").micros == 2_500_000)
        #expect(throws: ConfigurationError.self) {
            try DaemonOverrides(zones: "1,65536").applied(to: DaemonConfiguration())
        }
        #expect(try DaemonOverrides(zones: "1, 0x2").applied(to: DaemonConfiguration()).fusion.zones == [1, 2])
        #expect(SecondsArgument(argument: "9223372036854.775808") == nil)
        #expect(SecondsArgument(argument: "9223372036854.775807")?.micros == Int64.max)
        do {
            _ = try SecondsArgument.parser(.staleAfter)("-0")
        } catch {
            #expect("\(error)" == "must not be negative, found -0")
        }
    }

    // MARK: the new fusion keys

    @Test func deescalationHoldAndReferencePowerReachTheFusionEngine() throws {
        let configuration = try ConfigScratch().load("fusion:\n  deescalation_hold: 2.5\n  p1m_dbm: -61.5\n")
        #expect(configuration.fusion.deescalationHold == 2_500_000)
        #expect(configuration.fusion.referencePower == -61.5)
        let fusion = configuration.fusionConfiguration()
        #expect(fusion.deescalationHold == 2_500_000)
        #expect(fusion.referencePower == -61.5)
        let defaults = DaemonConfiguration().fusionConfiguration()
        #expect(defaults.deescalationHold == 1_000_000)
        #expect(defaults.referencePower == nil)
        let flagged = try DaemonOverrides(deescalationHold: "0.1").applied(to: configuration)
        #expect(flagged.fusion.deescalationHold == 100_000)
    }

    @Test func deescalationHoldAndReferencePowerApplyOnReload() throws {
        let scratch = ConfigScratch()
        let running = try scratch.load("fusion:\n  policy: safety\n")
        let path = scratch.write("beacond.yaml", "fusion:\n  deescalation_hold: 4\n  p1m_dbm: -70\n")
        let plan = try DaemonConfiguration.reload(path: path, overrides: DaemonOverrides(), current: running)
        #expect(plan.applies(.fusionDeescalationHold))
        #expect(plan.applies(.fusionReferencePower))
        #expect(plan.fusionChanged)
        #expect(plan.configuration.fusionConfiguration().deescalationHold == 4_000_000)
        #expect(plan.configuration.fusionConfiguration().referencePower == -70)
        #expect(plan.needsRestart.isEmpty)
    }

    @Test func aBadValueOnReloadKeepsTheRunningConfiguration() throws {
        let scratch = ConfigScratch()
        let running = try scratch.load("fusion:\n  max_ttl: 30\n")
        let path = scratch.write("beacond.yaml", "fusion:\n  max_ttl: 9223372036854.775808\n")
        #expect(throws: ConfigurationError.self) {
            _ = try DaemonConfiguration.reload(path: path, overrides: DaemonOverrides(), current: running)
        }
        #expect(running.fusion.maxTTL == 30_000_000)
    }
}
