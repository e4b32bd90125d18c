/// Formats Unix microseconds as ISO 8601 UTC without Foundation:
/// `2026-05-16T12:00:10.000Z` (milliseconds) or with six decimals.
///
/// Every `Int64` formats without trapping (±292,277 years). Years 0000 to 9999 print with four
/// digits; others use ISO 8601's expanded form with a sign, `-0001-12-31T…` or `+10000-01-01T…`.
package enum TimeFormat {
    /// Unix microseconds split into the UTC calendar: what both ISO 8601 writers (this String one and
    /// `ByteCursor.appendISO8601`) format.
    struct CivilTime {
        var year: Int64
        var month: Int64
        var day: Int64
        /// 0..<86,400.
        var secondOfDay: Int64
        /// Microseconds, 0..<1,000,000.
        var fraction: Int64
    }

    static func civil(micros: Int64) -> CivilTime {
        // Floor division: the fraction and the second of the day are never negative.
        var seconds = micros / 1_000_000
        var fraction = micros % 1_000_000
        if fraction < 0 {
            seconds -= 1
            fraction += 1_000_000
        }
        var days = seconds / 86_400
        var secondOfDay = seconds % 86_400
        if secondOfDay < 0 {
            days -= 1
            secondOfDay += 86_400
        }
        // |days| < 1.1 × 10^8: the civil-from-days arithmetic below stays far inside Int64.
        // Howard Hinnant's algorithm, days since 1970-01-01.
        days += 719_468
        let era = (days >= 0 ? days : days - 146_096) / 146_097
        let dayOfEra = days - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return CivilTime(year: year, month: month, day: day, secondOfDay: secondOfDay, fraction: fraction)
    }

    package static func iso8601(micros: Int64, fractionDigits: Int = 3) -> String {
        let civil = civil(micros: micros)
        let (year, month, day, secondOfDay, fraction) = (
            civil.year, civil.month, civil.day, civil.secondOfDay, civil.fraction
        )
        var text = yearText(year) + "-" + pad(month, 2) + "-" + pad(day, 2)
        text += "T" + pad(secondOfDay / 3600, 2) + ":" + pad(secondOfDay / 60 % 60, 2) + ":" + pad(secondOfDay % 60, 2)
        if fractionDigits > 0 {
            let digits = min(6, fractionDigits)
            var divisor: Int64 = 1
            for _ in 0..<(6 - digits) { divisor *= 10 }
            text += "." + pad(fraction / divisor, digits)
        }
        return text + "Z"
    }

    private static func yearText(_ year: Int64) -> String {
        if (0...9999).contains(year) { return pad(year, 4) }
        return (year < 0 ? "-" : "+") + pad(Int64(year.magnitude), 4)
    }

    /// `value` (never negative here) with leading zeros to `width` digits.
    private static func pad(_ value: Int64, _ width: Int) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }
}
