import BLEPayload
import BeacondClient
import CircuitState

/// The report page's data block: compact JSON the page's script draws from (docs/report.md).
///
/// Times are µs from `base` (the report's start, Unix µs), so each fits a JavaScript number
/// exactly. Each stretch is an array: `[row, mode, start, end, …]` with the row's fields after
/// (`RaceReportData.zoneFields` and so on, in the order the script reads them). Addresses and
/// messages are listed once and referred to by index. Every `<` is written `\u003c`, so no text
/// can close the `<script>` element it sits in.
enum RaceReportData {
    static let modes = TrackMode.allCases.map(\.rawValue) + ["unknown"]

    static func json(_ report: RaceReport) -> [UInt8] {
        var rows = Set(report.stretches.map(\.row))
        rows.insert(.published)
        rows.insert(.raceControl)
        let rowOrder = rows.sorted()
        let rowIndex = Dictionary(uniqueKeysWithValues: rowOrder.enumerated().map { ($1, $0) })
        var addresses = Interner()
        var strings = Interner()

        var writer = JSONWriter(capacity: 64 + report.stretches.count * 64)
        writer.beginObject()
        writer.key("title"); writer.string(report.title)
        writer.key("tz"); writer.string(report.timeZone)
        writer.key("base"); writer.int(report.start)
        writer.key("span"); writer.int(max(0, report.end - report.start))
        writer.key("modes"); writer.beginArray()
        for mode in modes { writer.string(mode) }
        writer.endArray()
        writer.key("ends"); writer.beginArray()
        for end in ClaimEnd.allCases { writer.string(end.description) }
        writer.endArray()
        writer.key("endIds"); writer.beginArray()
        for end in ClaimEnd.allCases { writer.string(end.rawValue) }
        writer.endArray()
        writer.key("rows"); writer.beginArray()
        for row in rowOrder { writer.string(row.name) }
        writer.endArray()
        writer.key("labels"); writer.beginArray()
        for row in rowOrder { writer.string(label(row)) }
        writer.endArray()
        writer.key("s"); writer.beginArray()
        for stretch in report.stretches.sorted(by: { ($0.row, $0.start) < ($1.row, $1.start) }) {
            writer.beginArray()
            writer.int(rowIndex[stretch.row] ?? 0)
            writer.int(stretch.mode.flatMap { TrackMode.allCases.firstIndex(of: $0) } ?? modes.count - 1)
            writer.int(stretch.start.subtractingSaturating(report.start))
            writer.int(stretch.end.subtractingSaturating(report.start))
            switch stretch.detail {
            case .claim(let claim):
                writer.int(addresses.index(claim.key.address.description))
                writer.int(claim.sequence)
                writer.int(claim.lastSequence)
                writer.int(claim.ttl)
                writer.int(claim.rssi)
                writer.int((claim.signed ? 1 : 0) | (claim.contested ? 2 : 0))
                writer.int(claim.heldFrom.map { $0.subtractingSaturating(report.start) })
                writer.int(claim.beacons)
                writer.int(ClaimEnd.allCases.firstIndex(of: claim.end) ?? 0)
                writer.int(claim.version)
                if case .staff(let sourceID, _) = claim.key { writer.int(sourceID) } else { writer.null() }
            case .published(let published):
                writer.int(StateSource.allCases.firstIndex(of: published.source) ?? 2)
                writer.int(published.zone)
                writer.int(published.address.map { addresses.index($0.description) })
                writer.int(published.sequence)
                writer.int(published.signed ? 1 : 0)
                writer.int(published.message.map { strings.index($0) })
            case .raceControl(let control):
                writer.int((control.fresh ? 1 : 0) | (control.latched ? 2 : 0))
                writer.int(control.message.map { strings.index($0) })
                writer.int(control.failures)
                writer.int(control.lastFailure.map { strings.index($0) })
            }
            writer.endArray()
        }
        writer.endArray()
        writer.key("gaps"); writer.beginArray()
        for gap in report.gaps {
            writer.beginArray()
            writer.int(gap.start.subtractingSaturating(report.start))
            writer.int(gap.end.subtractingSaturating(report.start))
            writer.endArray()
        }
        writer.endArray()
        writer.key("addr"); writer.beginArray()
        for address in addresses.values { writer.string(address) }
        writer.endArray()
        writer.key("str"); writer.beginArray()
        for text in strings.values { writer.string(text) }
        writer.endArray()
        writer.endObject()
        return scriptSafe(writer.bytes)
    }

    static func label(_ row: RaceRow) -> String {
        switch row {
        case .published: "Screens (published)"
        case .raceControl: "Race control"
        case .zone(let zone): "Zone \(zone)"
        }
    }

    /// `<` only occurs inside JSON strings: `\u003c` there means the same.
    static func scriptSafe(_ json: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(json.count)
        for byte in json {
            if byte == UInt8(ascii: "<") {
                out += Array("\\u003c".utf8)
            } else {
                out.append(byte)
            }
        }
        return out
    }

    private struct Interner {
        var values: [String] = []
        var indices: [String: Int] = [:]

        mutating func index(_ value: String) -> Int {
            if let index = indices[value] { return index }
            indices[value] = values.count
            values.append(value)
            return values.count - 1
        }
    }
}

extension ClaimEnd: CustomStringConvertible {
    /// How the page says why a claim ended.
    public var description: String {
        switch self {
        case .expired: "expired (its TTL ran out)"
        case .replaced: "replaced by a newer frame"
        case .cleared: "cleared (TTL 0), after the de-escalation hold"
        case .deescalated: "lowered, after the de-escalation hold"
        case .outranked: "outranked by a more severe claim in the zone"
        case .contested: "contested: an older-sequence frame from its address asserted more"
        case .evicted: "evicted (override table full)"
        case .reconfigured: "dropped by a reload of the settings"
        case .recordingEnded: "still in force when the recording ended"
        }
    }
}
