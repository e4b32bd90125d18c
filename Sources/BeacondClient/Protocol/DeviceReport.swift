import BLEPayload

/// One entry of `status.devices` (docs/protocol.md, "status"): a device heard that is not a
/// GeoRacing beacon, listed when the request asked for `"devices":true`.
package struct DeviceReport: Hashable, Sendable, Decodable {
    package var address: String
    /// `public`, `random`, … (`AddressType.name`).
    package var addressType: String
    package var rssi: Int?
    /// The company id of its first manufacturer-specific data; nil when it sent none.
    package var companyID: Int?
    package var lastSeen: Double
    package var reports: Int

    enum CodingKeys: String, CodingKey {
        case address = "addr"
        case addressType = "addr_type"
        case rssi
        case companyID = "company_id"
        case lastSeen = "last_seen_s"
        case reports
    }

    package init(
        address: String, addressType: String, rssi: Int?, companyID: Int?, lastSeen: Double, reports: Int
    ) {
        self.address = address
        self.addressType = addressType
        self.rssi = rssi
        self.companyID = companyID
        self.lastSeen = lastSeen
        self.reports = reports
    }

    package func render(into writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("addr"); writer.string(address)
        writer.key("addr_type"); writer.string(addressType)
        writer.key("rssi"); writer.int(rssi)
        writer.key("company_id"); writer.int(companyID)
        writer.key("last_seen_s"); writer.number(lastSeen, decimals: 3)
        writer.key("reports"); writer.int(reports)
        writer.endObject()
    }
}

/// `status.devices_counters`: what the table of other devices heard and could not list.
package struct DeviceCounters: Hashable, Sendable, Decodable {
    /// The most devices listed, and the seconds one stays listed after it was last heard.
    package var limit: Int
    package var window: Double
    package var reports: Int
    package var displaced: Int
    package var refused: Int
    package var expired: Int
    /// Seconds since the HCI scanners' kernel filter was lifted for the clients looking at every
    /// device (0 in the reply that lifted it): until then only GeoRacing reports were read, so a
    /// list asked for within the first seconds is still filling. Absent when no filter applies.
    package var listening: Double?

    enum CodingKeys: String, CodingKey {
        case limit
        case window = "window_s"
        case reports, displaced, refused, expired
        case listening = "listening_s"
    }

    package init(limit: Int, window: Double, reports: Int, displaced: Int, refused: Int, expired: Int) {
        self.limit = limit
        self.window = window
        self.reports = reports
        self.displaced = displaced
        self.refused = refused
        self.expired = expired
    }

    package func render(into writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("limit"); writer.int(limit)
        writer.key("window_s"); writer.number(window, decimals: 3)
        writer.key("reports"); writer.int(reports)
        writer.key("displaced"); writer.int(displaced)
        writer.key("refused"); writer.int(refused)
        writer.key("expired"); writer.int(expired)
        if let listening { writer.key("listening_s"); writer.number(listening, decimals: 3) }
        writer.endObject()
    }
}
