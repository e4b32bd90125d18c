import BLEPayload
import CircuitState

/// `{"type":"history",…}`: one page of the race so far, the answer to `history`
/// (docs/protocol.md, "history"). Times are Unix µs on the daemon's wall clock: its engine
/// times converted with the offset between the two clocks when it answered (in a replay, capture
/// time).
package struct HistoryMessage: Hashable, Sendable, Decodable, RenderedMessage {
    /// The daemon's wall clock when it answered, Unix µs.
    package var now: Int64
    /// The start of the window asked for (`since_s` before `now`); nil for all kept.
    package var since: Int64?
    package var stretches: [RaceStretch]
    /// The number to ask for next (`after`), and whether ended stretches remain after this page.
    package var next: Int
    package var more: Bool
    /// Stretches asked for that the bounds had already dropped.
    package var skipped: Int
    /// The history's bounds and what they hold: stretches and estimated bytes kept, dropped so far.
    package var kept: Int
    package var bytes: Int
    package var dropped: Int
    package var limit: Int
    package var byteLimit: Int

    package init(
        now: Int64, since: Int64?, page: HistoryPage, kept: Int, bytes: Int, dropped: Int, limit: Int, byteLimit: Int
    ) {
        self.now = now
        self.since = since
        stretches = page.stretches
        next = page.next
        more = page.more
        skipped = page.skipped
        self.kept = kept
        self.bytes = bytes
        self.dropped = dropped
        self.limit = limit
        self.byteLimit = byteLimit
    }

    enum CodingKeys: String, CodingKey {
        case now = "now_us"
        case since = "since_us"
        case stretches, next, more, skipped, kept, bytes, dropped, limit
        case byteLimit = "byte_limit"
    }

    package init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        now = try container.decode(Int64.self, forKey: .now)
        since = try container.decodeIfPresent(Int64.self, forKey: .since)
        stretches = try container.decode([HistoryStretch].self, forKey: .stretches).map(\.stretch)
        next = try container.decode(Int.self, forKey: .next)
        more = try container.decode(Bool.self, forKey: .more)
        skipped = try container.decode(Int.self, forKey: .skipped)
        kept = try container.decode(Int.self, forKey: .kept)
        bytes = try container.decode(Int.self, forKey: .bytes)
        dropped = try container.decode(Int.self, forKey: .dropped)
        limit = try container.decode(Int.self, forKey: .limit)
        byteLimit = try container.decode(Int.self, forKey: .byteLimit)
    }

    package func render(into writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("type"); writer.string("history")
        writer.key("now_us"); writer.int(now)
        writer.key("since_us"); writer.int(since)
        writer.key("next"); writer.int(next)
        writer.key("more"); writer.bool(more)
        writer.key("skipped"); writer.int(skipped)
        writer.key("kept"); writer.int(kept)
        writer.key("bytes"); writer.int(bytes)
        writer.key("dropped"); writer.int(dropped)
        writer.key("limit"); writer.int(limit)
        writer.key("byte_limit"); writer.int(byteLimit)
        writer.key("stretches"); writer.beginArray()
        for stretch in stretches { HistoryStretch(stretch).render(into: &writer) }
        writer.endArray()
        writer.endObject()
    }
}

/// One stretch as the protocol carries it: `row`, `mode`, `start_us`, `end_us`, and its row's details.
struct HistoryStretch: Decodable {
    var stretch: RaceStretch

    init(_ stretch: RaceStretch) {
        self.stretch = stretch
    }

    enum CodingKeys: String, CodingKey {
        case row, mode
        case start = "start_us"
        case end = "end_us"
        case kind, addr
        case sourceID = "source_id"
        case version, seq
        case lastSeq = "last_seq"
        case ttl, rssi, signed, beacons, contested
        case heldFrom = "held_from_us"
        case ended, source, zone, message, fresh, latched, failures
        case lastFailure = "last_failure"
    }

    func render(into writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("row"); writer.string(stretch.row.name)
        writer.key("mode"); writer.string(stretch.mode?.rawValue ?? "unknown")
        writer.key("start_us"); writer.int(stretch.start)
        writer.key("end_us"); writer.int(stretch.end)
        switch stretch.detail {
        case .claim(let claim):
            switch claim.key {
            case .circuit: writer.key("kind"); writer.string("circuit")
            case .staff(let sourceID, _):
                writer.key("kind"); writer.string("staff")
                writer.key("source_id"); writer.int(sourceID)
            case .command: writer.key("kind"); writer.string("command")
            }
            writer.key("addr"); writer.string(claim.key.address.description)
            writer.key("version"); writer.int(claim.version)
            writer.key("seq"); writer.int(claim.sequence)
            writer.key("last_seq"); writer.int(claim.lastSequence)
            writer.key("ttl"); writer.int(claim.ttl)
            writer.key("rssi"); writer.int(claim.rssi)
            writer.key("signed"); writer.bool(claim.signed)
            writer.key("beacons"); writer.int(claim.beacons)
            writer.key("contested"); writer.bool(claim.contested)
            writer.key("held_from_us"); writer.int(claim.heldFrom)
            writer.key("ended"); writer.string(claim.end.rawValue)
        case .published(let published):
            writer.key("source"); writer.string(published.source.rawValue)
            writer.key("zone"); writer.int(published.zone)
            writer.key("addr"); writer.string(orNull: published.address?.description)
            writer.key("seq"); writer.int(published.sequence)
            writer.key("signed"); writer.bool(published.signed)
            writer.key("message"); writer.string(orNull: published.message)
        case .raceControl(let control):
            writer.key("fresh"); writer.bool(control.fresh)
            writer.key("latched"); writer.bool(control.latched)
            writer.key("message"); writer.string(orNull: control.message)
            writer.key("failures"); writer.int(control.failures)
            writer.key("last_failure"); writer.string(orNull: control.lastFailure)
        }
        writer.endObject()
    }

    init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let rowName = try container.decode(String.self, forKey: .row)
        let modeName = try container.decode(String.self, forKey: .mode)
        let mode = TrackMode(rawValue: modeName)
        guard mode != nil || modeName == "unknown" else {
            throw DecodingError.dataCorruptedError(forKey: .mode, in: container, debugDescription: "unknown mode")
        }
        let start = try container.decode(Int64.self, forKey: .start)
        let end = try container.decode(Int64.self, forKey: .end)
        let detail: RaceStretch.Detail
        let row: RaceRow
        switch rowName {
        case "published":
            row = .published
            let source = try container.decode(String.self, forKey: .source)
            detail = .published(
                PublishedDetail(
                    source: StateSource(rawValue: source) ?? .none,
                    zone: try container.decodeIfPresent(UInt16.self, forKey: .zone),
                    address: try container.decodeIfPresent(String.self, forKey: .addr).flatMap(BluetoothAddress.init),
                    sequence: try container.decodeIfPresent(UInt16.self, forKey: .seq),
                    signed: try container.decode(Bool.self, forKey: .signed),
                    message: try container.decodeIfPresent(String.self, forKey: .message)))
        case "race_control":
            row = .raceControl
            detail = .raceControl(
                RaceControlDetail(
                    fresh: try container.decode(Bool.self, forKey: .fresh),
                    latched: try container.decode(Bool.self, forKey: .latched),
                    message: try container.decodeIfPresent(String.self, forKey: .message),
                    failures: try container.decode(Int.self, forKey: .failures),
                    lastFailure: try container.decodeIfPresent(String.self, forKey: .lastFailure)))
        default:
            guard rowName.hasPrefix("zone "), let zone = UInt16(rowName.dropFirst(5)) else {
                throw DecodingError.dataCorruptedError(forKey: .row, in: container, debugDescription: "unknown row")
            }
            row = .zone(zone)
            detail = .claim(try Self.claim(container, zone: zone))
        }
        stretch = RaceStretch(row: row, start: start, end: end, mode: mode, detail: detail)
    }

    private static func claim(_ container: KeyedDecodingContainer<CodingKeys>, zone: UInt16) throws -> ClaimDetail {
        let text = try container.decode(String.self, forKey: .addr)
        guard let address = BluetoothAddress(text) else {
            throw DecodingError.dataCorruptedError(forKey: .addr, in: container, debugDescription: "not an address")
        }
        let key: OverrideKey
        switch try container.decode(String.self, forKey: .kind) {
        case "staff": key = .staff(sourceID: try container.decode(UInt32.self, forKey: .sourceID), address: address)
        case "command": key = .command(address: address)
        default: key = .circuit(zone: zone, address: address)
        }
        guard let end = ClaimEnd(rawValue: try container.decode(String.self, forKey: .ended)) else {
            throw DecodingError.dataCorruptedError(forKey: .ended, in: container, debugDescription: "unknown end")
        }
        return ClaimDetail(
            key: key, version: try container.decode(UInt8.self, forKey: .version),
            sequence: try container.decode(UInt16.self, forKey: .seq),
            ttl: try container.decode(UInt8.self, forKey: .ttl),
            rssi: try container.decodeIfPresent(Int8.self, forKey: .rssi),
            signed: try container.decode(Bool.self, forKey: .signed),
            lastSequence: try container.decode(UInt16.self, forKey: .lastSeq),
            beacons: try container.decode(Int.self, forKey: .beacons),
            contested: try container.decode(Bool.self, forKey: .contested),
            heldFrom: try container.decodeIfPresent(Int64.self, forKey: .heldFrom), end: end)
    }
}
