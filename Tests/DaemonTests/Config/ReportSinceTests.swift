import Testing

@testable import beacond

/// `beacond report --since`: the config file's decimal seconds, with a unit, from 1 s to 30 days.
@Suite struct ReportSinceTests {
    @Test(
        arguments: [
            ("2h", 7_200), ("90m", 5_400), ("1.5h", 5_400), ("45", 45), ("45s", 45), ("30d", 2_592_000),
            ("1", 1), ("1.2", 2), ("+3m", 180),
        ] as [(String, Int64)])
    func durationsInTheirUnits(text: String, seconds: Int64) throws {
        #expect(try ReportCommand.parseSince(text) == seconds)
    }

    @Test(arguments: [
        "31d", "0", "0.5s", "-5m", "5x", "h", "", "1e3", "2.5.1h", "99999999999999999999d", "9223372036854d",
        "0.0000001h",
    ])
    func refusesOutOfRangeAndMalformed(text: String) {
        #expect(throws: (any Error).self) { try ReportCommand.parseSince(text) }
    }
}
