// The report formatter and JSON writer as they were before issue 15 (String-based), kept as an
// oracle: the byte-level output code must print exactly what they printed, byte for byte.
// Only the names changed (Legacy…), and the parts of the writer reports do not use are left out.
import BLEPayload

@testable import BeacondClient
@testable import BeacondCore

/// Writes JSON into a byte buffer without Foundation: objects and arrays are
/// opened and closed explicitly, and commas are placed automatically.
struct LegacyJSONWriter {
    var bytes: [UInt8] = []
    /// Bit n - 1 set: the container at depth n (1...64) already holds an element.
    private var hasElement: UInt64 = 0
    /// The same for depths beyond 64 (index depth - 65); empty, and so never allocated, in practice.
    private var deepHasElement: [Bool] = []
    private var depth = 0
    private var afterKey = false

    init(capacity: Int = 512) {
        bytes.reserveCapacity(capacity)
    }

    private mutating func separate() {
        if afterKey {
            afterKey = false
            return
        }
        guard depth > 0 else { return }
        let hadElement: Bool
        if depth <= 64 {
            let bit: UInt64 = 1 << UInt64(depth - 1)
            hadElement = hasElement & bit != 0
            hasElement |= bit
        } else {
            hadElement = deepHasElement[depth - 65]
            deepHasElement[depth - 65] = true
        }
        if hadElement { bytes.append(UInt8(ascii: ",")) }
    }

    private mutating func open(_ character: Unicode.Scalar) {
        separate()
        bytes.append(UInt8(ascii: character))
        depth += 1
        if depth <= 64 {
            hasElement &= ~(1 << UInt64(depth - 1))
        } else if deepHasElement.count < depth - 64 {
            deepHasElement.append(false)
        } else {
            deepHasElement[depth - 65] = false
        }
    }

    /// An unmatched close is written but leaves the depth at 0 (the caller's bug, not a trap).
    private mutating func close(_ character: Unicode.Scalar) {
        depth = max(0, depth - 1)
        bytes.append(UInt8(ascii: character))
    }

    mutating func beginObject() { open("{") }
    mutating func endObject() { close("}") }
    mutating func beginArray() { open("[") }
    mutating func endArray() { close("]") }

    /// A key written as is: a literal of beacond's, which needs no escaping.
    mutating func key(_ name: StaticString) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        name.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
        afterKey = true
    }

    mutating func key(_ name: String) {
        separate()
        appendEscaped(name)
        bytes.append(UInt8(ascii: ":"))
        afterKey = true
    }

    mutating func null() {
        separate()
        bytes.append(contentsOf: [0x6E, 0x75, 0x6C, 0x6C])
    }

    mutating func bool(_ value: Bool) {
        separate()
        bytes.append(contentsOf: value ? Array("true".utf8) : Array("false".utf8))
    }

    mutating func int(_ value: some BinaryInteger) {
        separate()
        appendDecimal(value)
    }

    /// An optional integer, or null.
    mutating func int(_ value: (some BinaryInteger)?) {
        if let value { int(value) } else { null() }
    }

    mutating func string(_ value: String) {
        separate()
        appendEscaped(value)
    }

    /// A string, or null.
    mutating func string(orNull value: String?) {
        if let value { string(value) } else { null() }
    }

    /// A string from raw bytes (a device name, say): invalid UTF-8 becomes U+FFFD.
    mutating func string(bytes raw: UnsafeRawBufferPointer) {
        string(String(decoding: raw, as: UTF8.self))
    }

    /// Lower-case hex of `raw`, as a string.
    mutating func hex(_ raw: UnsafeRawBufferPointer) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        for byte in raw {
            bytes.append(legacyHexDigitsLower[Int(byte >> 4)])
            bytes.append(legacyHexDigitsLower[Int(byte & 0xF)])
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// Unix microseconds as seconds with exactly six decimals.
    mutating func seconds(micros: Int64) {
        separate()
        if micros < 0 { bytes.append(UInt8(ascii: "-")) }
        let magnitude = micros.magnitude
        appendDecimal(magnitude / 1_000_000)
        bytes.append(UInt8(ascii: "."))
        var fraction = magnitude % 1_000_000
        var digits = [UInt8](repeating: UInt8(ascii: "0"), count: 6)
        for index in stride(from: 5, through: 0, by: -1) {
            digits[index] = UInt8(ascii: "0") + UInt8(fraction % 10)
            fraction /= 10
        }
        bytes.append(contentsOf: digits)
    }

    /// A Double with exactly `decimals` decimals (0...18; trailing zeros kept), or null when not
    /// finite or when `value` × 10^decimals is beyond ±2^63 (no such number is printed wrong).
    mutating func number(_ value: Double, decimals requested: Int) {
        guard value.isFinite else { return null() }
        let decimals = min(max(requested, 0), 18) // 10^19 and beyond do not fit the scaled Int64
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        guard let scaled = Int64(exactly: (value * scale).rounded()) else { return null() }
        separate()
        if scaled < 0 { bytes.append(UInt8(ascii: "-")) }
        let magnitude = scaled.magnitude
        let unit = UInt64(scale)
        appendDecimal(magnitude / unit)
        if decimals > 0 {
            bytes.append(UInt8(ascii: "."))
            var fraction = magnitude % unit
            var digits = [UInt8](repeating: UInt8(ascii: "0"), count: decimals)
            for index in stride(from: decimals - 1, through: 0, by: -1) {
                digits[index] = UInt8(ascii: "0") + UInt8(fraction % 10)
                fraction /= 10
            }
            bytes.append(contentsOf: digits)
        }
    }

    /// A Double in its shortest round-trip form (`21.5`, `1e-05`, at most 24 bytes), or null when
    /// not finite.
    mutating func number(_ value: Double) {
        guard value.isFinite else { return null() }
        separate()
        bytes.append(contentsOf: value.description.utf8)
    }

    mutating func newline() {
        bytes.append(UInt8(ascii: "\n"))
    }

    private mutating func appendDecimal(_ value: some BinaryInteger) {
        bytes.append(contentsOf: String(value).utf8)
    }

    /// A JSON string. Besides what JSON requires, C1 controls, the bidi controls (U+202A–202E,
    /// U+2066–2069) and the line separators (U+2028, U+2029) are written as `\uXXXX`, so JSON shown
    /// on a terminal cannot be driven or reordered by outside text (`TerminalText`); the value
    /// decodes to the same string.
    private mutating func appendEscaped(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { utf8 in
            var index = 0
            while index < utf8.count {
                let byte = utf8[index]
                index += 1
                switch byte {
                case UInt8(ascii: "\""): bytes.append(contentsOf: [0x5C, 0x22])
                case UInt8(ascii: "\\"): bytes.append(contentsOf: [0x5C, 0x5C])
                case UInt8(ascii: "\n"): bytes.append(contentsOf: [0x5C, UInt8(ascii: "n")])
                case UInt8(ascii: "\r"): bytes.append(contentsOf: [0x5C, UInt8(ascii: "r")])
                case UInt8(ascii: "\t"): bytes.append(contentsOf: [0x5C, UInt8(ascii: "t")])
                case 0..<0x20, 0x7F:
                    appendUnicodeEscape(UInt16(byte))
                case 0xC2 where index < utf8.count && (0x80...0x9F).contains(utf8[index]):
                    appendUnicodeEscape(UInt16(utf8[index]))
                    index += 1
                case 0xE2 where index + 1 < utf8.count:
                    let scalar = 0x2000 | UInt16(utf8[index] & 0x3F) << 6 | UInt16(utf8[index + 1] & 0x3F)
                    if (0x80...0x81).contains(utf8[index]),
                        (0x2028...0x202E).contains(scalar) || (0x2066...0x2069).contains(scalar)
                    {
                        appendUnicodeEscape(scalar)
                        index += 2
                    } else {
                        bytes.append(byte)
                    }
                default:
                    bytes.append(byte)
                }
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private mutating func appendUnicodeEscape(_ value: UInt16) {
        bytes.append(contentsOf: [0x5C, UInt8(ascii: "u")])
        for shift in stride(from: 12, through: 0, by: -4) {
            bytes.append(legacyHexDigitsLower[Int(value >> UInt16(shift) & 0xF)])
        }
    }
}

private let legacyHexDigitsLower: [UInt8] = Array("0123456789abcdef".utf8)

/// Formats advertising reports for `replay` and `scan`: JSON lines (the contract in
/// docs/replay-json.md) or an aligned table for people.
struct LegacyReportFormatter {
    let decoder: GeoRacingDecoder

    init(decoder: GeoRacingDecoder) {
        self.decoder = decoder
    }

    /// One JSON object for `report`, with `match` as its GeoRacing decoding.
    func json(_ report: AdvertisingReport, match: GeoRacingMatch, into writer: inout LegacyJSONWriter) {
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
        case .userBeacon(let user):
            writer.key("georacing_user_beacon")
            writer.beginObject()
            writer.key("location"); writer.bool(user.carriesLocation)
            writer.endObject()
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

    static func json(_ signal: GeoRacingSignal, into writer: inout LegacyJSONWriter) {
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
        if let command = signal.command { writer.key("command"); writer.int(command.rawValue) }
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
        case .userBeacon(let user):
            line += "GeoRacing user beacon" + (user.carriesLocation ? " (with a location)" : "")
        case .none:
            var parts: [String] = []
            for entry in report.data.manufacturerData {
                let hex = entry.payload.prefix(12).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
                let more = entry.payload.count > 12 ? "…" : ""
                parts.append("mfr 0x\(String(entry.companyID, radix: 16)) \(hex)\(more)")
            }
            if report.isTruncated { parts.append("truncated") }
            line += parts.joined(separator: ", ")
        }
        return line
    }

    static func describe(_ signal: GeoRacingSignal) -> String {
        let mode =
            signal.mode.isKnown
            ? signal.mode.name.uppercased().legacyReplacingOccurrences("_", " ")
            : "UNKNOWN(\(signal.mode.rawValue))"
        if let command = signal.command { return "command \(command) \(mode) ttl \(signal.ttl)s" }
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
    func legacyReplacingOccurrences(_ target: Character, _ replacement: Character) -> String {
        String(map { $0 == target ? replacement : $0 })
    }
}
