import BLEPayload

/// Formats advertising reports for `replay` and `scan`: JSON lines (the contract in
/// docs/replay-json.md) or an aligned table for people.
///
/// Bytes, not Strings: each report is written field by field into a `ByteSink` (in `replay` and
/// `scan`, straight into the output buffer), with the JSON's fixed parts as literals and the
/// numbers, addresses and times formatted by hand.
package struct ReportFormatter {
    let decoder: GeoRacingDecoder

    package init(decoder: GeoRacingDecoder) {
        self.decoder = decoder
    }

    /// At least the bytes `json` or `row` writes for `report`, plus its newline. Every output byte
    /// beyond the fixed fields (under 640 bytes) comes from an AD byte: a manufacturer entry costs
    /// at most 31 bytes for its 4 bytes of header and 2 per payload byte; a name byte at most 6
    /// (a control as `\u00XX`). When the estimate falls short anyway, the caller writes again.
    static func lineBound(_ report: AdvertisingReport) -> Int {
        1024 + 8 * report.data.bytes.count
    }

    /// One JSON object for `report`, with `match` as its GeoRacing decoding.
    func json(_ report: AdvertisingReport, match: GeoRacingMatch, into writer: inout JSONWriter) {
        writer.rawValue { json(report, match: match, into: &$0) }
    }

    /// `adapter`: `beacond scan` with several adapters names the one that heard the report.
    func json<Sink: ByteSink>(
        _ report: AdvertisingReport, match: GeoRacingMatch, adapter: String? = nil, into out: inout Sink
    ) {
        out.append("{\"ts\":")
        out.appendSeconds(micros: report.timestamp)
        out.append(",\"addr\":\"")
        out.appendAddress(report.address.rawValue)
        out.append("\",\"addr_type\":\"")
        Self.appendName(report.addressType, into: &out)
        out.append("\",\"kind\":\"")
        Self.appendName(report.kind, into: &out)
        out.appendByte(UInt8(ascii: "\""))
        if report.kind == .extended {
            out.append(",\"connectable\":")
            Self.appendBool(report.properties.contains(.connectable), into: &out)
            out.append(",\"scannable\":")
            Self.appendBool(report.properties.contains(.scannable), into: &out)
            out.append(",\"directed\":")
            Self.appendBool(report.properties.contains(.directed), into: &out)
            out.append(",\"scan_response\":")
            Self.appendBool(report.properties.contains(.scanResponse), into: &out)
        }
        out.append(",\"rssi\":")
        Self.appendDecimal(orNull: report.rssi, into: &out)
        out.append(",\"tx_power\":")
        Self.appendDecimal(orNull: report.txPower, into: &out)
        let fields = ADFields(report.data)
        out.append(",\"ad_tx_power\":")
        Self.appendDecimal(orNull: fields.txPowerLevel, into: &out)
        out.append(",\"mfr\":[")
        var first = true
        for entry in report.data.manufacturerData {
            out.append(first ? "{\"company\":" : ",{\"company\":")
            first = false
            out.appendDecimal(magnitude: UInt64(entry.companyID))
            out.append(",\"data\":\"")
            out.appendHexLower(entry.payload)
            out.append("\"}")
        }
        out.appendByte(UInt8(ascii: "]"))
        switch match {
        case .signal(let signal):
            out.append(",\"signal\":")
            Self.json(signal, into: &out)
        case .rejected(let rejection):
            out.append(",\"georacing_rejected\":")
            out.appendJSONString(rejection.reason)
        case .userBeacon(let user):
            // Whether it carried a location, never the location: it is an attendee's.
            out.append(
                user.carriesLocation
                    ? ",\"georacing_user_beacon\":{\"location\":true}"
                    : ",\"georacing_user_beacon\":{\"location\":false}")
        case .none:
            break
        }
        if report.isTruncated { out.append(",\"truncated\":true") }
        if let controller = report.controller {
            out.append(",\"controller\":")
            out.appendDecimal(magnitude: UInt64(controller))
        }
        if let adapter {
            out.append(",\"adapter\":")
            out.appendJSONString(adapter)
        }
        if let sid = report.sid {
            out.append(",\"sid\":")
            out.appendDecimal(magnitude: UInt64(sid))
        }
        if let direct = report.directAddress {
            out.append(",\"direct_addr\":\"")
            out.appendAddress(direct.rawValue)
            out.appendByte(UInt8(ascii: "\""))
        }
        if let name = fields.localName {
            out.append(",\"name\":")
            out.appendJSONString(decoding: name)
        }
        if let offset = fields.malformedOffset {
            out.append(",\"ad_malformed_at\":")
            out.appendDecimal(offset)
        }
        out.appendByte(UInt8(ascii: "}"))
    }

    static func json(_ signal: GeoRacingSignal, into writer: inout JSONWriter) {
        writer.rawValue { json(signal, into: &$0) }
    }

    static func json<Sink: ByteSink>(_ signal: GeoRacingSignal, into out: inout Sink) {
        out.append("{\"version\":")
        out.appendDecimal(magnitude: UInt64(signal.version.rawValue))
        out.append(",\"zone\":")
        out.appendDecimal(magnitude: UInt64(signal.zone))
        out.append(",\"mode\":")
        switch signal.mode {
        case .normal: out.append("\"normal\"")
        case .safetyCar: out.append("\"safety_car\"")
        case .redFlag: out.append("\"red_flag\"")
        case .evacuation: out.append("\"evacuation\"")
        case .yellowFlag: out.append("\"yellow_flag\"")
        case .vsc: out.append("\"vsc\"")
        case .unknown: out.append("\"unknown\"")
        }
        out.append(",\"mode_raw\":")
        out.appendDecimal(magnitude: UInt64(signal.mode.rawValue))
        out.append(",\"flags\":")
        out.appendDecimal(magnitude: UInt64(signal.flags))
        out.append(",\"seq\":")
        out.appendDecimal(magnitude: UInt64(signal.sequence))
        out.append(",\"ttl\":")
        out.appendDecimal(magnitude: UInt64(signal.ttl))
        out.append(",\"temperature\":")
        appendDecimal(orNull: signal.temperature, into: &out)
        out.append(",\"source_id\":")
        appendDecimal(orNull: signal.sourceID, into: &out)
        if let command = signal.command {
            out.append(",\"command\":")
            out.appendDecimal(magnitude: UInt64(command.rawValue))
        }
        if let signature = signal.signature {
            out.append(",\"key_id\":")
            out.appendDecimal(magnitude: UInt64(signature.keyID))
            out.append(signature.kind == .staff ? ",\"kind\":\"staff\"" : ",\"kind\":\"circuit\"")
            out.append(",\"signed_at\":")
            out.appendDecimal(magnitude: UInt64(signature.signedAt))
            out.append(",\"tag\":\"")
            for shift in stride(from: 60, through: 0, by: -4) {
                out.appendHexLower(signature.tag >> UInt64(shift) & 0xF)
            }
            out.appendByte(UInt8(ascii: "\""))
        }
        out.appendByte(UInt8(ascii: "}"))
    }

    static func appendDecimal<Sink: ByteSink>(orNull value: (some BinaryInteger)?, into out: inout Sink) {
        if let value { out.appendDecimal(value) } else { out.append("null") }
    }

    static func appendBool<Sink: ByteSink>(_ value: Bool, into out: inout Sink) {
        if value { out.append("true") } else { out.append("false") }
    }

    /// The address type's name, unquoted (`public`, `reserved_200`): `AddressType.name` without
    /// building a string.
    static func appendName<Sink: ByteSink>(_ type: AddressType, into out: inout Sink) {
        switch type {
        case .publicDevice: out.append("public")
        case .randomDevice: out.append("random")
        case .publicIdentity: out.append("public_identity")
        case .randomIdentity: out.append("random_identity")
        case .anonymous: out.append("anonymous")
        case .reserved(let value):
            out.append("reserved_")
            out.appendDecimal(magnitude: UInt64(value))
        }
    }

    /// The PDU kind's name, unquoted (`adv_ind`).
    static func appendName<Sink: ByteSink>(_ kind: AdvertisingPDUKind, into out: inout Sink) {
        switch kind {
        case .advInd: out.append("adv_ind")
        case .advDirectInd: out.append("adv_direct_ind")
        case .advScanInd: out.append("adv_scan_ind")
        case .advNonconnInd: out.append("adv_nonconn_ind")
        case .scanRsp: out.append("scan_rsp")
        case .extended: out.append("ext_adv")
        }
    }
}

/// `AdvertisingData.txPowerLevel`, `localName` and `malformedOffset` in one pass over the AD
/// instead of four.
struct ADFields {
    private(set) var txPowerLevel: Int8?
    private(set) var localName: UnsafeRawBufferPointer?
    private(set) var malformedOffset: Int?

    init(_ data: AdvertisingData) {
        var sawTXPower = false
        var completeName: UnsafeRawBufferPointer?
        var shortenedName: UnsafeRawBufferPointer?
        var iterator = data.makeIterator()
        while let structure = iterator.next() {
            switch structure.type {
            case ADType.txPowerLevel where !sawTXPower:
                // The first TX Power structure decides, as `first(_:)` does, even when it is empty.
                sawTXPower = true
                txPowerLevel = structure.data.first.map { Int8(bitPattern: $0) }
            case ADType.completeLocalName where completeName == nil:
                completeName = structure.data
            case ADType.shortenedLocalName where shortenedName == nil:
                shortenedName = structure.data
            default:
                break
            }
        }
        localName = completeName ?? shortenedName
        malformedOffset = iterator.malformedOffset
    }
}
