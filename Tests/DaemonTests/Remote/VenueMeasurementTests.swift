import Testing

@testable import BeacondCore

/// Race control's `temperature` as GeoRacing's server writes it: `"11.3°C"` (api/server.js), and
/// `"--°C"` when the weather service gave nothing.
@Suite struct VenueMeasurementTests {
    @Test(arguments: [
        ("11.3°C", 11.3), (" 11.3 °C ", 11.3), ("-2ºC", -2), ("21.5", 21.5), ("80%", 80), ("7°", 7),
    ])
    func numbersWithOrWithoutTheirUnit(text: String, value: Double) {
        #expect(VenueMeasurement.number(in: text) == value)
    }

    @Test(arguments: ["--°C", "°C", "", "11.3°C°C", "hot", "11.3 K"])
    func anythingElseIsMissing(text: String) {
        #expect(VenueMeasurement.number(in: text) == nil)
    }
}
