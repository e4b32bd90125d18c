import BLEPayload

/// A GeoRacing signal as a scanner heard it, on its way to the hub.
struct ScannedSignal: Sendable {
    var signal: GeoRacingSignal
    var address: BluetoothAddress
    var rssi: Int8?
    var txPower: Int8?
    /// Engine time, µs: CLOCK_BOOTTIME live, capture time in replay.
    var time: Int64
}
