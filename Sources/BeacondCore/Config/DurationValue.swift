import CircuitState

/// Decimal text in millionths: `5`, `2.5`, `0.000001` → 5_000_000, 2_500_000, 1. The one parser for
/// durations (seconds → microseconds) and speed factors, from the config file, flags and reloads.
///
/// Never goes through floating point and never overflows: the whole part is range-checked before
/// it is scaled, and the scaling reports overflow instead of trapping.
package enum DecimalMillionths {
    package enum Problem: Error, Hashable, Sendable {
        /// Not `[+]digits[.digits]` at all (`5s`, `1e3`, `nan`, `0x10`, empty).
        case notANumber
        /// A leading `-`, even on zero.
        case negative
        /// More than six decimal places.
        case tooManyDecimals
        /// Does not fit in Int64 millionths.
        case tooLarge
    }

    package static func parse(_ text: String) -> Result<Int64, Problem> {
        var body = Substring(text)
        if body.hasPrefix("-") {
            if case .failure(.notANumber) = parseUnsigned(body.dropFirst()) { return .failure(.notANumber) }
            return .failure(.negative)
        }
        if body.hasPrefix("+") { body = body.dropFirst() }
        return parseUnsigned(body)
    }

    private static func parseUnsigned(_ text: Substring) -> Result<Int64, Problem> {
        let parts = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard let whole = parts.first, !whole.isEmpty || parts.count == 2, isDigits(whole) else {
            return .failure(.notANumber)
        }
        var fraction: Int64 = 0
        if parts.count == 2 {
            let digits = parts[1]
            guard !digits.isEmpty, isDigits(digits) else { return .failure(.notANumber) }
            guard digits.count <= 6 else { return .failure(.tooManyDecimals) }
            guard var value = Int64(digits) else { return .failure(.notANumber) }
            for _ in digits.count..<6 { value *= 10 } // at most 999_999: cannot overflow
            fraction = value
        }
        // Int64(_:) refuses (nil) rather than traps on a whole part beyond Int64.
        guard let seconds = whole.isEmpty ? 0 : Int64(whole) else { return .failure(.tooLarge) }
        let (scaled, scaleOverflow) = seconds.multipliedReportingOverflow(by: 1_000_000)
        let (sum, sumOverflow) = scaled.addingReportingOverflow(fraction)
        guard !scaleOverflow, !sumOverflow else { return .failure(.tooLarge) }
        return .success(sum)
    }

    private static func isDigits(_ text: Substring) -> Bool {
        text.unicodeScalars.allSatisfy { $0.value >= 0x30 && $0.value <= 0x39 }
    }
}

/// The values a duration key accepts, in microseconds; every duration key has one.
package struct DurationRange: Hashable, Sendable {
    var micros: ClosedRange<Int64>
    /// `0` is accepted besides `micros` and turns the feature off.
    var zeroTurnsOff = false

    static let second: Int64 = 1_000_000
    static let day: Int64 = 86_400 * second

    /// `scanner.silence_restart_s`: 0 (off) or 1 s to a day.
    static let silenceRestart = DurationRange(micros: second...day, zeroTurnsOff: true)
    /// `scanner.bluez_refresh_s`: 0 (off) or 1 s to an hour.
    static let blueZRefresh = DurationRange(micros: second...3_600 * second, zeroTurnsOff: true)
    /// `remote.poll_interval`: 0.1 s to an hour.
    static let pollInterval = DurationRange(micros: 100_000...3_600 * second)
    /// `remote.timeout`: 0.1 s to 5 minutes.
    static let timeout = DurationRange(micros: 100_000...300 * second)
    /// `remote.stale_after`: 0.1 s to a day.
    package static let staleAfter = DurationRange(micros: 100_000...day)
    /// `fusion.max_ttl`: 0.1 s to a day.
    package static let maxTTL = DurationRange(micros: 100_000...day)
    /// `fusion.deescalation_hold`: 0.1 s to 10 s (the fusion engine's range).
    package static let deescalationHold = DurationRange(micros: FusionConfiguration.deescalationHoldRange)
    /// `beacond status --timeout`: 1 ms to an hour.
    package static let statusTimeout = DurationRange(micros: 1_000...3_600 * second)
    /// `beacond scan --duration`: 1 ms to 31 days.
    package static let scanDuration = DurationRange(micros: 1_000...31 * day)
    /// `beacon.interval`, `beacond beacon --interval`: what a controller accepts for a
    /// non-connectable advert, 20 ms to 10.24 s.
    /// `security.clock_window`: a second to an hour.
    package static let clockWindow = DurationRange(micros: second...3_600 * second)
    package static let beaconInterval = DurationRange(micros: 20_000...10_240_000)
    /// `kiosk.language_period`: a second to a minute.
    package static let languagePeriod = DurationRange(micros: second...60 * second)
    /// `kiosk.speak_repeat`: a second to an hour.
    package static let speakRepeat = DurationRange(micros: second...3_600 * second)

    /// `between 0.1 and 300 seconds` (`0 or between 1 and 86400 seconds`).
    var text: String {
        let span =
            "between \(DecimalText.format(micros: micros.lowerBound)) and "
            + "\(DecimalText.format(micros: micros.upperBound)) seconds"
        return zeroTurnsOff ? "0 (off) or " + span : span
    }

    func contains(_ value: Int64) -> Bool { micros.contains(value) || (zeroTurnsOff && value == 0) }
}

extension ConfigValueParser {
    /// Seconds as a decimal with up to six places, exactly, in microseconds, within `range`.
    static func duration(_ value: RawConfigValue, in range: DurationRange) throws(ConfigValueProblem) -> Int64 {
        let text = try scalar(value, expected: "a number of seconds")
        return try duration(text: text, in: range, at: value)
    }

    /// The checks of `duration(_:in:)` on text, for flags that are not config keys.
    package static func duration(text: String, in range: DurationRange, at value: RawConfigValue? = nil)
        throws(ConfigValueProblem) -> Int64
    {
        let micros: Int64
        switch DecimalMillionths.parse(text) {
        case .success(let parsed): micros = parsed
        case .failure(.notANumber):
            throw ConfigValueProblem(
                "expected a number of seconds (like 5 or 2.5), found \(quoted(text))", at: value)
        case .failure(.negative):
            throw ConfigValueProblem("must not be negative, found \(shown(text))", at: value)
        case .failure(.tooManyDecimals):
            throw ConfigValueProblem(
                "\(quoted(text)) has more than 6 decimal places (the resolution is a microsecond)", at: value)
        case .failure(.tooLarge):
            throw ConfigValueProblem("must be \(range.text), found \(shown(text))", at: value)
        }
        guard range.contains(micros) else {
            throw ConfigValueProblem("must be \(range.text), found \(shown(text))", at: value)
        }
        return micros
    }
}
