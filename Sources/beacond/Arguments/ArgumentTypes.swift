import ArgumentParser
import BeacondCore
import CircuitState

extension Policy: ExpressibleByArgument {}

/// A duration in seconds, with up to six decimals (`15`, `2.5`), held as integer microseconds.
struct SecondsArgument: ExpressibleByArgument, Sendable, CustomStringConvertible {
    var micros: Int64

    init(micros: Int64) { self.micros = micros }

    /// Any non-negative duration that fits; flags with a range use `parser(_:)` instead.
    init?(argument: String) {
        guard let micros = Self.parse(argument) else { return nil }
        self.micros = micros
    }

    /// Parses a non-negative decimal number of seconds without going through Double,
    /// so `0.000001` is exactly one microsecond; nil for anything else, including overflow.
    static func parse(_ text: String) -> Int64? {
        try? DecimalMillionths.parse(text).get()
    }

    /// A flag's transform: the config file's duration rules and `range`, with the reason on failure
    /// (ArgumentParser prints it after the flag and exits 64).
    static func parser(_ range: DurationRange) -> @Sendable (String) throws -> SecondsArgument {
        { text in
            do throws(ConfigValueProblem) {
                return SecondsArgument(micros: try ConfigValueParser.duration(text: text, in: range))
            } catch {
                throw FlagValueError(reason: error.reason)
            }
        }
    }

    var description: String { DecimalText.format(micros: micros) }
    var defaultValueDescription: String { description }
}

/// Why a flag's value was refused; ArgumentParser shows `description` after the flag's name.
struct FlagValueError: Error, CustomStringConvertible {
    var reason: String
    var description: String { reason }

    /// Runs one of the config file's value checks on a flag's text.
    static func checking<Value>(_ text: String, _ check: (RawConfigValue) throws(ConfigValueProblem) -> Value)
        throws(FlagValueError) -> Value
    {
        do throws(ConfigValueProblem) {
            return try check(.flag(text))
        } catch {
            throw FlagValueError(reason: error.reason)
        }
    }
}
