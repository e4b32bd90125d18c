import BLEPayload

/// Formats advertising reports for `replay` and `scan`: JSON lines (the contract in
/// docs/replay-json.md) or an aligned table for people.
package struct ReportFormatter {
    let decoder: GeoRacingDecoder

    package init(decoder: GeoRacingDecoder) {
        self.decoder = decoder
    }

    /// One JSON object for `report`, with `match` as its GeoRacing decoding.
    func json(_ report: AdvertisingReport, match: GeoRacingMatch, into writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("ts"); writer.seconds(micros: report.timestamp)
        writer.key("addr"); writer.string(report.address.description)
        writer.key("addr_type"); writer.string(report.addressType.name)
        writer.key("kind"); writer.string(report.kind.name)
        if report.kind == .extended {
            writer.key("connectable"); writer.bool(report.properties.contains(.connectable))
            writer.key("scannable"); writer.bool(report.properties.contains(.scannable))
            writer.key("directed"); writer.bool(report.properties.contains(.directed))
            writer.key("scan_response"); writer.bool(report.properties.contains(.scanResponse))
        }
        writer.key("rssi"); writer.int(report.rssi)
        writer.key("tx_power"); writer.int(report.txPower)
        writer.key("ad_tx_power"); writer.int(report.data.txPowerLevel)
        writer.key("mfr")
        writer.beginArray()
        for entry in report.data.manufacturerData {
            writer.beginObject()
            writer.key("company"); writer.int(entry.companyID)
            writer.key("data"); writer.hex(entry.payload)
            writer.endObject()
        }
        writer.endArray()
        switch match {
        case .signal(let signal):
            writer.key("signal")
            Self.json(signal, into: &writer)
        case .rejected(let rejection):
            writer.key("georacing_rejected"); writer.string(rejection.reason)
        case .none:
            break
        }
        if report.isTruncated {
            writer.key("truncated"); writer.bool(true)
        }
        if let controller = report.controller {
            writer.key("controller"); writer.int(controller)
        }
        if let sid = report.sid {
            writer.key("sid"); writer.int(sid)
        }
        if let direct = report.directAddress {
            writer.key("direct_addr"); writer.string(direct.description)
        }
        if let name = report.data.localName {
            writer.key("name"); writer.string(bytes: name)
        }
        if let offset = report.data.malformedOffset {
            writer.key("ad_malformed_at"); writer.int(offset)
        }
        writer.endObject()
    }

    static func json(_ signal: GeoRacingSignal, into writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("version"); writer.int(signal.version.rawValue)
        writer.key("zone"); writer.int(signal.zone)
        writer.key("mode"); writer.string(signal.mode.name)
        writer.key("mode_raw"); writer.int(signal.mode.rawValue)
        writer.key("flags"); writer.int(signal.flags)
        writer.key("seq"); writer.int(signal.sequence)
        writer.key("ttl"); writer.int(signal.ttl)
        writer.key("temperature"); writer.int(signal.temperature)
        writer.key("source_id"); writer.int(signal.sourceID)
        writer.endObject()
    }

    static let tableHeader =
        pad("TIME (UTC)", 28) + pad("ADDRESS", 19) + pad("ADDR TYPE", 16)
        + pad("KIND", 16) + padLeft("RSSI", 5) + padLeft("TXP", 5) + "  DETAILS"

    /// One table row for `report`.
    func row(_ report: AdvertisingReport, match: GeoRacingMatch) -> String {
        var line = Self.pad(TimeFormat.iso8601(micros: report.timestamp, fractionDigits: 6), 28)
        line += Self.pad(report.address.description, 19)
        line += Self.pad(report.addressType.name, 16)
        line += Self.pad(report.kind.name, 16)
        line += Self.padLeft(report.rssi.map { String($0) } ?? "-", 5)
        line += Self.padLeft((report.txPower ?? report.data.txPowerLevel).map { String($0) } ?? "-", 5)
        line += "  "
        switch match {
        case .signal(let signal):
            line += Self.describe(signal)
        case .rejected(let rejection):
            line += "GeoRacing frame rejected: \(rejection.reason)"
        case .none:
            var parts: [String] = []
            for entry in report.data.manufacturerData {
                let hex = entry.payload.prefix(12).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
                parts.append("mfr 0x\(String(entry.companyID, radix: 16)) \(hex)\(entry.payload.count > 12 ? "…" : "")")
            }
            if report.isTruncated { parts.append("truncated") }
            line += parts.joined(separator: ", ")
        }
        return line
    }

    static func describe(_ signal: GeoRacingSignal) -> String {
        let mode =
            signal.mode.isKnown
            ? signal.mode.name.uppercased().replacingOccurrences("_", " ")
            : "UNKNOWN(\(signal.mode.rawValue))"
        var text =
            signal.version == .v1 ? "v1 zone \(signal.zone)" : "v2 staff \(signal.sourceID ?? 0) zone \(signal.zone)"
        text += " \(mode) seq \(signal.sequence) ttl \(signal.ttl)s"
        if let temperature = signal.temperature { text += " \(temperature)°C" }
        if signal.flags != 0 { text += " flags 0x\(String(signal.flags, radix: 16))" }
        return text
    }

    static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
    }

    static func padLeft(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : String(repeating: " ", count: width - text.count) + text
    }
}

extension String {
    func replacingOccurrences(_ target: Character, _ replacement: Character) -> String {
        String(map { $0 == target ? replacement : $0 })
    }
}
