import BLEPayload

/// The GeoRacing beacons heard recently, whether or not they override: what a staff
/// monitor lists. Bounded: past `capacity` the least recently heard beacon is forgotten.
public struct BeaconDirectory: Sendable {
    public static let defaultCapacity = 256

    /// One beacon as last heard.
    public struct Entry: Sendable {
        public var key: OverrideKey
        public var signal: GeoRacingSignal
        public var rssi: Int8?
        public var txPower: Int8?
        public var window = RSSIWindow()
        public var lastSeen: Int64
        /// What the engine did with the latest frame.
        public var lastOutcome: IngestOutcome
        public var frames = 0

        public var address: BluetoothAddress { key.address }

        /// Why the latest frame did not count, in the protocol's words; nil when it did.
        public var rejection: String? {
            switch lastOutcome {
            case .inserted, .replaced, .refreshed, .revised, .cleared, .contested: nil
            case .ignoredOlder: "older"
            case .belowSigned: "below_signed"
            case .unverified(let reason): reason.rawValue
            case .refused: "table_full"
            case .filtered(let reason): reason.rawValue
            }
        }
    }

    public let capacity: Int
    private var entries: [OverrideKey: Entry] = [:]
    public private(set) var forgotten = 0

    public init(capacity: Int = defaultCapacity) {
        self.capacity = max(1, capacity)
    }

    public var count: Int { entries.count }

    /// Records a frame and what the engine did with it.
    public mutating func record(
        _ signal: GeoRacingSignal, address: BluetoothAddress, rssi: Int8?, txPower: Int8?, outcome: IngestOutcome,
        at time: Int64
    ) {
        let key = OverrideKey(signal: signal, address: address)
        if let index = entries.index(forKey: key) {
            // In place: one hash of the key, no copy of the entry.
            Self.update(&entries.values[index], signal, rssi: rssi, txPower: txPower, outcome: outcome, at: time)
            return
        }
        if entries.count >= capacity, let oldest = entries.values.min(by: { $0.lastSeen < $1.lastSeen }) {
            entries[oldest.key] = nil
            forgotten += 1
        }
        var entry = Entry(key: key, signal: signal, rssi: rssi, txPower: txPower, lastSeen: time, lastOutcome: outcome)
        if let rssi { entry.window.append(rssi) }
        entry.frames = 1
        entries[key] = entry
    }

    private static func update(
        _ entry: inout Entry, _ signal: GeoRacingSignal, rssi: Int8?, txPower: Int8?, outcome: IngestOutcome,
        at time: Int64
    ) {
        entry.signal = signal
        entry.rssi = rssi
        entry.txPower = txPower ?? entry.txPower
        if let rssi { entry.window.append(rssi) }
        entry.lastSeen = max(entry.lastSeen, time)
        entry.lastOutcome = outcome
        entry.frames += 1
    }

    public func entry(for key: OverrideKey) -> Entry? { entries[key] }

    /// Every entry, most recently heard first (ties in key description order, for stable output).
    public var recent: [Entry] { recent(limit: entries.count).listed }

    /// The `limit` first entries of `recent`, and how many there are in all. Ties are ordered on
    /// integers that sort like the key descriptions (`OverrideKey.DescriptionOrder`): a status
    /// reply builds no String per comparison.
    public func recent(limit: Int) -> (listed: [Entry], total: Int) {
        let keys = entries.values.map {
            (lastSeen: $0.lastSeen, order: OverrideKey.DescriptionOrder($0.key), key: $0.key)
        }
        let listed = keys.smallest(limit) {
            $0.lastSeen != $1.lastSeen ? $0.lastSeen > $1.lastSeen : $0.order < $1.order
        }
        return (listed.compactMap { entries[$0.key] }, entries.count)
    }

    public mutating func removeAll() {
        entries.removeAll()
    }
}
