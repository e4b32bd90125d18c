import BLEPayload

/// A GeoRacing signal as a scanner heard it, on its way to the hub.
struct ScannedSignal: Sendable {
    var signal: GeoRacingSignal
    var address: BluetoothAddress
    var rssi: Int8?
    var txPower: Int8?
    /// Engine time, µs: CLOCK_BOOTTIME live, capture time in replay.
    var time: Int64
    /// The adapter that heard it: its index among the scanner's adapters.
    var adapter: UInt16 = 0
    /// `AdapterCopyFilter.key` of its address and advertising data when the scanner has several
    /// adapters (computed on the scanner's thread); 0 otherwise.
    var copyKey = 0
}

/// Which of the scanner's adapters a sink serves.
package struct ScannerAdapterTag: Hashable, Sendable {
    package var name: String
    /// Its index among the scanner's adapters (the copy filter's adapter number).
    package var index: UInt16
    /// The scanner has, or may come to have, several adapters: the hub filters copies.
    package var filtersCopies: Bool

    package init(name: String, index: UInt16, filtersCopies: Bool) {
        self.name = name
        self.index = index
        self.filtersCopies = filtersCopies
    }
}
