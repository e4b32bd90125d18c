import BLEPayload
import Synchronization

/// The devices heard that are not GeoRacing beacons (phones, watches, other beacons), for staff
/// looking at what is on the air (`beacond watch --all`, status `devices`): the `capacity`
/// strongest heard within the last `window`, with counters for what did not fit.
///
/// A pure value with its times injected (engine µs: CLOCK_BOOTTIME live, capture time in replay).
/// Recording a report never allocates: the entries live in an array reserved at `capacity`, a
/// device already listed is updated in place, a new one takes a free slot, an expired one's, or
/// the weakest one's when it is stronger (a report without RSSI counts as the weakest).
package struct NearbyDevices: Sendable {
    /// The most devices listed.
    package static let capacity = 64
    /// How long a device stays listed after it was last heard, µs.
    package static let window: Int64 = 10_000_000

    package struct Entry: Hashable, Sendable {
        package var address: BluetoothAddress
        /// The HCI address type (0 public, 1 random, …).
        package var addressType: UInt8
        package var rssi: Int8?
        /// The company id of its first manufacturer-specific data; nil when it sent none.
        package var companyID: UInt16?
        /// Engine time it was last heard, µs.
        package var lastSeen: Int64
        /// Reports heard from it since it was listed.
        package var reports: Int
    }

    /// Counters since start.
    package struct Counters: Hashable, Sendable {
        /// Reports of devices that are not GeoRacing beacons.
        package var reports = 0
        /// Listed devices replaced by a stronger newcomer while the table was full.
        package var displaced = 0
        /// Newcomers not listed: the table was full of stronger devices heard within the window.
        package var refused = 0
        /// Listed devices dropped because they were not heard for `window`.
        package var expired = 0
    }

    /// One report of a device, as `record` takes it.
    package struct Sighting: Sendable {
        package var address: BluetoothAddress
        package var addressType: UInt8
        package var rssi: Int8?
        package var companyID: UInt16?
        package var time: Int64

        /// `report` heard at `time` (engine µs); the company id of its first manufacturer-specific data.
        init(_ report: AdvertisingReport, at time: Int64) {
            var company: UInt16?
            for entry in report.data.manufacturerData {
                company = entry.companyID
                break
            }
            address = report.address
            addressType = report.addressType.hciValue
            rssi = report.rssi
            companyID = company
            self.time = time
        }
    }

    package let capacity: Int
    package let window: Int64
    private var entries: [Entry]
    package private(set) var counters = Counters()

    package init(capacity: Int = NearbyDevices.capacity, window: Int64 = NearbyDevices.window) {
        self.capacity = max(1, capacity)
        self.window = max(0, window)
        entries = []
        entries.reserveCapacity(self.capacity)
    }

    mutating func record(_ sighting: Sighting) {
        record(
            address: sighting.address, addressType: sighting.addressType, rssi: sighting.rssi,
            companyID: sighting.companyID, at: sighting.time)
    }

    /// Devices listed now, expired ones included until the next `record` or `listed`.
    package var count: Int { entries.count }

    /// One report of `address` heard at `time`.
    package mutating func record(
        address: BluetoothAddress, addressType: UInt8, rssi: Int8?, companyID: UInt16?, at time: Int64
    ) {
        counters.reports += 1
        if let index = entries.firstIndex(where: { $0.address == address && $0.addressType == addressType }) {
            entries[index].rssi = rssi
            entries[index].companyID = companyID
            entries[index].lastSeen = max(entries[index].lastSeen, time)
            entries[index].reports += 1
            return
        }
        let entry = Entry(
            address: address, addressType: addressType, rssi: rssi, companyID: companyID, lastSeen: time, reports: 1)
        if entries.count < capacity {
            entries.append(entry)
            return
        }
        let window = window
        if let stale = entries.firstIndex(where: { !Self.isFresh($0, at: time, window: window) }) {
            counters.expired += 1
            entries[stale] = entry
            return
        }
        // Full of devices heard within the window: the weakest (the oldest of equals) gives way
        // to a stronger newcomer.
        var weakest = 0
        for index in entries.indices.dropFirst() {
            let candidate = entries[index]
            let current = entries[weakest]
            let (a, b) = (Self.strength(candidate.rssi), Self.strength(current.rssi))
            if a < b || (a == b && candidate.lastSeen < current.lastSeen) { weakest = index }
        }
        guard Self.strength(rssi) > Self.strength(entries[weakest].rssi) else {
            counters.refused += 1
            return
        }
        counters.displaced += 1
        entries[weakest] = entry
    }

    /// The devices heard within the window before `now`, strongest first (equal RSSI: the most
    /// recently heard first, then by address). Drops the expired ones.
    package mutating func listed(at now: Int64) -> [Entry] {
        let before = entries.count
        let window = window
        entries.removeAll { !Self.isFresh($0, at: now, window: window) }
        counters.expired += before - entries.count
        return entries.sorted { a, b in
            let (sa, sb) = (Self.strength(a.rssi), Self.strength(b.rssi))
            if sa != sb { return sa > sb }
            if a.lastSeen != b.lastSeen { return a.lastSeen > b.lastSeen }
            return (a.address, a.addressType) < (b.address, b.addressType)
        }
    }

    /// Heard within the window before `now`. A time after `now` (a clock stepping back, a replay
    /// looping) counts as fresh; differences are taken without overflowing (a capture's times
    /// may sit anywhere in Int64).
    private static func isFresh(_ entry: Entry, at now: Int64, window: Int64) -> Bool {
        let (age, overflow) = now.subtractingReportingOverflow(entry.lastSeen)
        if overflow { return now < entry.lastSeen }
        return age <= window
    }

    /// RSSI as an ordering: no RSSI is weaker than any.
    private static func strength(_ rssi: Int8?) -> Int { rssi.map { Int($0) } ?? Int(Int8.min) - 1 }
}

/// `NearbyDevices` shared between a scanner's thread (recording) and the hub's event loop
/// (listing for a status reply). The lock is held for one update or one copy of 64 entries.
package final class NearbyDeviceTable: Sendable {
    private let table: Mutex<NearbyDevices>
    /// Told of each look at the list, which lifts the scanners' kernel filter; nil when no
    /// scanner filters.
    let demand: AllDevicesDemand?

    package init(_ devices: NearbyDevices = NearbyDevices(), demand: AllDevicesDemand? = nil) {
        table = Mutex(devices)
        self.demand = demand
    }

    /// Records `report` heard at `time` (engine µs). Allocates nothing.
    func record(_ report: AdvertisingReport, at time: Int64) {
        let sighting = NearbyDevices.Sighting(report, at: time)
        table.withLock { $0.record(sighting) }
    }

    /// Records `sightings` in order, under one lock (a scanner's burst). Allocates nothing.
    func record(_ sightings: [NearbyDevices.Sighting]) {
        guard !sightings.isEmpty else { return }
        table.withLock { devices in
            for sighting in sightings { devices.record(sighting) }
        }
    }

    /// The status reply's `devices` and `devices_counters` as of `now` (engine µs). A look at the
    /// list: it lifts the scanners' kernel filter.
    func report(at now: Int64) -> (devices: [DeviceReport], counters: DeviceCounters) {
        let listening = demand?.look()
        let (listed, counters, limit, window) = table.withLock {
            ($0.listed(at: now), $0.counters, $0.capacity, $0.window)
        }
        let devices = listed.map { DeviceReport($0, now: now) }
        var reported = DeviceCounters(counters, limit: limit, window: window)
        reported.listening = listening.map { Double($0) / 1_000_000 }
        return (devices, reported)
    }
}

/// The devices heard, in the replies that ask for them (`{"cmd":"status","devices":true}`).
extension NearbyDeviceTable: StatusContributor {
    package func contribute(to status: inout StatusMessage, for query: StatusQuery) {
        guard query.devices else { return }
        let report = report(at: query.now)
        status.devices = report.devices
        status.devicesCounters = report.counters
    }
}

extension DeviceReport {
    /// `entry` as of engine time `now`; differences in Double (engine times may sit anywhere in Int64).
    init(_ entry: NearbyDevices.Entry, now: Int64) {
        self.init(
            address: entry.address.description, addressType: AddressType(hciValue: entry.addressType).name,
            rssi: entry.rssi.map { Int($0) }, companyID: entry.companyID.map { Int($0) },
            lastSeen: max(0, Double(now) - Double(entry.lastSeen)) / 1_000_000, reports: entry.reports)
    }
}

extension DeviceCounters {
    init(_ counters: NearbyDevices.Counters, limit: Int, window: Int64) {
        self.init(
            limit: limit, window: Double(window) / 1_000_000, reports: counters.reports,
            displaced: counters.displaced, refused: counters.refused, expired: counters.expired)
    }
}
