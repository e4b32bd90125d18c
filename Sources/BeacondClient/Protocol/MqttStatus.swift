/// What the MQTT publisher reports in `beacond status` (`mqtt`) and `/metrics`.
package struct MqttStatus: Hashable, Sendable, Decodable {
    package var url = ""
    package var node = ""
    package var connected = false
    /// Successful connections after the first.
    package var reconnects = 0
    package var publishedStates = 0
    /// States replaced by a newer one before they were sent (the broker away or slow).
    package var coalescedStates = 0
    package var publishedSightings = 0
    /// Sightings dropped while the broker was away or the queue full.
    package var droppedSightings = 0
    /// Why the last connection failed or ended; nil before any failure.
    package var lastError: String?

    enum CodingKeys: String, CodingKey {
        case url, node, connected, reconnects
        case publishedStates = "published_states"
        case coalescedStates = "coalesced_states"
        case publishedSightings = "published_sightings"
        case droppedSightings = "dropped_sightings"
        case lastError = "last_error"
    }

    package init() {}

    package func render(into writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("url"); writer.string(url)
        writer.key("node"); writer.string(node)
        writer.key("connected"); writer.bool(connected)
        writer.key("reconnects"); writer.int(reconnects)
        writer.key("published_states"); writer.int(publishedStates)
        writer.key("coalesced_states"); writer.int(coalescedStates)
        writer.key("published_sightings"); writer.int(publishedSightings)
        writer.key("dropped_sightings"); writer.int(droppedSightings)
        writer.key("last_error"); writer.string(orNull: lastError)
        writer.endObject()
    }
}
