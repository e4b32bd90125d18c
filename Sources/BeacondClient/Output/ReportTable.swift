import BLEPayload

/// The table `replay` and `scan` print without `--json`: one aligned row per report, written as
/// bytes like the JSON lines.
extension ReportFormatter {
    static let tableHeader =
        pad("TIME (UTC)", 28) + pad("ADDRESS", 19) + pad("ADDR TYPE", 16)
        + pad("KIND", 16) + padLeft("RSSI", 5) + padLeft("TXP", 5) + "  DETAILS"

    /// One table row for `report`, without its newline.
    func row(_ report: AdvertisingReport, match: GeoRacingMatch) -> String {
        var bytes: [UInt8] = []
        row(report, match: match, into: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `adapter`: `beacond scan` with several adapters starts the details with the one that heard it.
    func row<Sink: ByteSink>(
        _ report: AdvertisingReport, match: GeoRacingMatch, adapter: String? = nil, into out: inout Sink
    ) {
        var columnStart = out.appendedCount
        out.appendISO8601(micros: report.timestamp)
        Self.padColumn(from: columnStart, to: 28, in: &out)
        columnStart = out.appendedCount
        out.appendAddress(report.address.rawValue)
        Self.padColumn(from: columnStart, to: 19, in: &out)
        columnStart = out.appendedCount
        Self.appendName(report.addressType, into: &out)
        Self.padColumn(from: columnStart, to: 16, in: &out)
        columnStart = out.appendedCount
        Self.appendName(report.kind, into: &out)
        Self.padColumn(from: columnStart, to: 16, in: &out)
        Self.appendRightAligned(report.rssi, width: 5, into: &out)
        Self.appendRightAligned(report.txPower ?? report.data.txPowerLevel, width: 5, into: &out)
        out.append("  ")
        if let adapter {
            out.appendBytes(adapter)
            out.append(": ")
        }
        switch match {
        case .signal(let signal):
            Self.describe(signal, into: &out)
        case .rejected(let rejection):
            out.append("GeoRacing frame rejected: ")
            out.appendBytes(rejection.reason)
        case .userBeacon(let user):
            // The attendee's location is never printed, only that the frame carried one.
            out.append(user.carriesLocation ? "GeoRacing user beacon (with a location)" : "GeoRacing user beacon")
        case .none:
            var first = true
            for entry in report.data.manufacturerData {
                if !first { out.append(", ") }
                first = false
                out.append("mfr 0x")
                out.appendHexLower(UInt64(entry.companyID))
                out.appendByte(UInt8(ascii: " "))
                out.appendHexLower(UnsafeRawBufferPointer(rebasing: entry.payload.prefix(12)))
                if entry.payload.count > 12 { out.append("…") }
            }
            if report.isTruncated { out.append(first ? "truncated" : ", truncated") }
        }
    }

    /// `v1 zone 3 RED FLAG seq 42 ttl 10s 21°C flags 0x1`, `v2 staff 7 zone 3 UNKNOWN(9) seq 1 ttl 5s`,
    /// `command evacuate EVACUATION ttl 30s`, `v3 circuit 0 zone 7 EVACUATION seq 42 ttl 10s 12°C key 1 t 1795852800`
    /// (a v3 frame as heard: `scan` holds no key, so its tag is not checked here).
    static func describe<Sink: ByteSink>(_ signal: GeoRacingSignal, into out: inout Sink) {
        switch signal.command {
        case .normal?: return out.append("command normal NORMAL ttl 0s")
        case .evacuate?: return out.append("command evacuate EVACUATION ttl 30s")
        case .danger?: return out.append("command danger RED FLAG ttl 30s")
        case nil: break
        }
        if signal.version == .v1 {
            out.append("v1 zone ")
        } else if let signature = signal.signature {
            out.append(signature.kind == .staff ? "v3 staff " : "v3 circuit ")
            out.appendDecimal(magnitude: UInt64(signal.sourceID ?? 0))
            out.append(" zone ")
        } else {
            out.append("v2 staff ")
            out.appendDecimal(magnitude: UInt64(signal.sourceID ?? 0))
            out.append(" zone ")
        }
        out.appendDecimal(magnitude: UInt64(signal.zone))
        switch signal.mode {
        case .normal: out.append(" NORMAL")
        case .safetyCar: out.append(" SAFETY CAR")
        case .redFlag: out.append(" RED FLAG")
        case .evacuation: out.append(" EVACUATION")
        case .yellowFlag: out.append(" YELLOW FLAG")
        case .vsc: out.append(" VSC")
        case .unknown(let raw):
            out.append(" UNKNOWN(")
            out.appendDecimal(magnitude: UInt64(raw))
            out.appendByte(UInt8(ascii: ")"))
        }
        out.append(" seq ")
        out.appendDecimal(magnitude: UInt64(signal.sequence))
        out.append(" ttl ")
        out.appendDecimal(magnitude: UInt64(signal.ttl))
        out.appendByte(UInt8(ascii: "s"))
        if let temperature = signal.temperature {
            out.appendByte(UInt8(ascii: " "))
            out.appendDecimal(temperature)
            out.append("°C")
        }
        if signal.flags != 0 {
            out.append(" flags 0x")
            out.appendHexLower(UInt64(signal.flags))
        }
        if let signature = signal.signature {
            out.append(" key ")
            out.appendDecimal(magnitude: UInt64(signature.keyID))
            out.append(" t ")
            out.appendDecimal(magnitude: UInt64(signature.signedAt))
        }
    }

    /// Spaces after a column's text up to `width` bytes, or one space when it is that long or longer.
    /// (Every column is ASCII, so bytes are characters.)
    static func padColumn<Sink: ByteSink>(from start: Int, to width: Int, in out: inout Sink) {
        let written = out.appendedCount - start
        out.appendSpaces(written >= width ? 1 : width - written)
    }

    /// The number right-aligned in `width` columns, or `-` when there is none.
    static func appendRightAligned<Sink: ByteSink>(_ value: Int8?, width: Int, into out: inout Sink) {
        guard let value else {
            out.appendSpaces(width - 1)
            out.appendByte(UInt8(ascii: "-"))
            return
        }
        let digits = value < 0 ? (value <= -100 ? 4 : value <= -10 ? 3 : 2) : (value >= 100 ? 3 : value >= 10 ? 2 : 1)
        out.appendSpaces(width - digits)
        out.appendDecimal(value)
    }

    static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
    }

    static func padLeft(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : String(repeating: " ", count: width - text.count) + text
    }
}

extension ByteSink {
    mutating func appendBytes(_ text: String) {
        var text = text
        text.withUTF8 { appendBytes(UnsafeRawBufferPointer($0)) }
    }

    /// `TimeFormat.iso8601(micros:fractionDigits: 6)` as bytes: `2026-05-16T12:00:10.000000Z`, years
    /// outside 0000–9999 in ISO 8601's expanded form (`-0001-…`, `+10000-…`).
    mutating func appendISO8601(micros: Int64) {
        let civil = TimeFormat.civil(micros: micros)
        let (year, month, day, secondOfDay, fraction) = (
            civil.year, civil.month, civil.day, civil.secondOfDay, civil.fraction
        )
        if (0...9999).contains(year) {
            appendZeroPadded(UInt64(year), width: 4)
        } else {
            appendByte(year < 0 ? UInt8(ascii: "-") : UInt8(ascii: "+"))
            let magnitude = year.magnitude
            if magnitude < 10_000 {
                appendZeroPadded(magnitude, width: 4)
            } else {
                appendDecimal(magnitude: magnitude)
            }
        }
        appendByte(UInt8(ascii: "-"))
        appendTwoDigits(month)
        appendByte(UInt8(ascii: "-"))
        appendTwoDigits(day)
        appendByte(UInt8(ascii: "T"))
        appendTwoDigits(secondOfDay / 3600)
        appendByte(UInt8(ascii: ":"))
        appendTwoDigits(secondOfDay / 60 % 60)
        appendByte(UInt8(ascii: ":"))
        appendTwoDigits(secondOfDay % 60)
        appendByte(UInt8(ascii: "."))
        appendZeroPadded(UInt64(fraction), width: 6)
        appendByte(UInt8(ascii: "Z"))
    }

    /// 0...99 as two digits.
    @inline(__always) private mutating func appendTwoDigits(_ value: Int64) {
        appendByte(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value / 10))
        appendByte(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value % 10))
    }
}

extension String {
    package func replacingOccurrences(_ target: Character, _ replacement: Character) -> String {
        String(map { $0 == target ? replacement : $0 })
    }
}
