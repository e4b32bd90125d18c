/// The order of `beacond watch`'s beacon table; `s` moves to the next one.
package enum WatchSort: String, Hashable, Sendable, CaseIterable {
    /// Circuit beacons by zone, then staff beacons by source id; equal keys by address.
    case key
    /// Strongest first; no RSSI last.
    case rssi
    /// Most recently heard first.
    case lastSeen = "last-seen"
    /// Most severe first: evacuation, red flag, safety car, VSC, yellow, green, anything else.
    case mode

    /// The order after this one, wrapping around.
    package var next: WatchSort {
        let all = Self.allCases
        let index = all.firstIndex(of: self) ?? 0
        return all[(index + 1) % all.count]
    }

    /// `beacons` in this order. Ties fall back to the key order, so the order is total and a
    /// redraw never shuffles equal rows.
    package func sorted(_ beacons: [BeaconReport]) -> [BeaconReport] {
        beacons.sorted { a, b in
            switch self {
            case .key:
                break
            case .rssi:
                let (ra, rb) = (a.rssi ?? Int.min, b.rssi ?? Int.min)
                if ra != rb { return ra > rb }
            case .lastSeen:
                let (la, lb) = (Self.finiteOrLast(a.lastSeen), Self.finiteOrLast(b.lastSeen))
                if la != lb { return la < lb }
            case .mode:
                let (ma, mb) = (Self.severity(a.mode), Self.severity(b.mode))
                if ma != mb { return ma < mb }
            }
            return Self.keyOrder(a, b)
        }
    }

    /// Devices (`--all`) are always strongest first; equal RSSI by the most recently heard, then address.
    package static func sorted(devices: [DeviceReport]) -> [DeviceReport] {
        devices.sorted { a, b in
            let (ra, rb) = (a.rssi ?? Int.min, b.rssi ?? Int.min)
            if ra != rb { return ra > rb }
            let (la, lb) = (finiteOrLast(a.lastSeen), finiteOrLast(b.lastSeen))
            if la != lb { return la < lb }
            return (a.address, a.addressType) < (b.address, b.addressType)
        }
    }

    /// 0 for the most severe mode; unknown modes after every known one.
    package static func severity(_ mode: String) -> Int {
        switch mode {
        case "evacuation": 0
        case "red_flag": 1
        case "safety_car": 2
        case "vsc": 3
        case "yellow_flag": 4
        case "normal": 5
        default: 6
        }
    }

    private static func keyOrder(_ a: BeaconReport, _ b: BeaconReport) -> Bool {
        let (ka, kb) = (a.kind == "circuit" ? 0 : 1, b.kind == "circuit" ? 0 : 1)
        if ka != kb { return ka < kb }
        let ia = a.kind == "circuit" ? a.zone : a.sourceID ?? -1
        let ib = b.kind == "circuit" ? b.zone : b.sourceID ?? -1
        if ia != ib { return ia < ib }
        if a.address != b.address { return a.address < b.address }
        return a.key < b.key
    }

    /// A finite non-negative age, or +infinity (sorted last) for none or nonsense from the socket.
    private static func finiteOrLast(_ seconds: Double?) -> Double {
        guard let seconds, seconds.isFinite else { return .infinity }
        return max(0, seconds)
    }
}
