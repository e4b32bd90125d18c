import CircuitState
import Foundation

/// The venue API's body (docs/fusion.md): the `circuit_state` row as an object, or an array whose
/// first element is the row (`[]` is no row, like `{}`).
struct VenueStateBody: Decodable {
    let snapshot: RemoteSnapshot
    /// Set when the row holds a mode name that names no mode beacond knows, and no other mode name
    /// does either: what it holds, escaped, for the `unknown_mode` failure. Such a body is never a
    /// successful fetch.
    let unknownMode: String?

    init(from decoder: any Decoder) throws {
        guard var rows = try? decoder.unkeyedContainer() else {
            let row = try VenueStateRow(from: decoder)
            (snapshot, unknownMode) = (row.snapshot, row.unknownMode)
            return
        }
        if rows.isAtEnd {
            (snapshot, unknownMode) = (RemoteSnapshot(), nil)
        } else {
            let row = try rows.decode(VenueStateRow.self)
            (snapshot, unknownMode) = (row.snapshot, row.unknownMode)
        }
    }
}

/// One `circuit_state` row. Every field is optional and loose: a field of an unexpected type counts
/// as missing rather than refusing the row (the venue's own types have varied), and text is cut to
/// `RemoteStateDocument`'s caps at a UTF-8 boundary. Only the row itself must be an object.
///
/// Keys are matched as race control's hands and tools may spell them (`VenueStateRow.canonicalKey`):
/// `GLOBAL_MODE`, `Global_Mode`, `globalMode` and ` global_mode` are all `global_mode`. Two keys
/// that read as the same field make the row ambiguous, as duplicate keys do: it is refused.
struct VenueStateRow: Decodable {
    let snapshot: RemoteSnapshot
    /// See `VenueStateBody.unknownMode`.
    let unknownMode: String?

    enum CodingKeys: String, CodingKey, CaseIterable {
        case id, mode, message, temperature, humidity, wind, forecast
        case globalMode = "global_mode"
        case lastUpdated = "last_updated"
        case evacuationRoute = "evacuation_route"
    }

    /// The field `key` reads as: its `RemoteModeName` skeleton without `_`, compared with each
    /// field's; nil for a key that is no field (kept as it is, and ignored).
    static func canonicalKey(_ key: String) -> CodingKeys? {
        let folded = RemoteModeName.skeleton(key).replacingOccurrences(of: "_", with: "")
        return CodingKeys.allCases.first {
            $0.rawValue.uppercased().replacingOccurrences(of: "_", with: "") == folded
        }
    }

    init(from decoder: any Decoder) throws {
        let raw = try decoder.singleValueContainer().decode(RemoteJSON.self)
        guard case .object(let members) = raw else {
            throw DecodingError.typeMismatch(
                [String: RemoteJSON].self,
                .init(codingPath: decoder.codingPath, debugDescription: "must be an object (found \(raw.kindName))"))
        }
        var fields: [String: RemoteJSON] = [:]
        var spelling: [CodingKeys: String] = [:]
        for key in members.keys.sorted() {
            guard let field = Self.canonicalKey(key) else { continue }
            if let earlier = spelling[field] {
                throw DecodingError.dataCorrupted(
                    .init(
                        codingPath: [],
                        debugDescription: "the row's keys \"\(TerminalText.escaped(earlier))\" and "
                            + "\"\(TerminalText.escaped(key))\" both name \"\(field.rawValue)\""))
            }
            spelling[field] = key
            fields[field.rawValue] = members[key]
        }
        let row = try RemoteJSONNodeDecoder(node: .object(fields), codingPath: decoder.codingPath)
            .container(keyedBy: CodingKeys.self)
        func text(_ key: CodingKeys, cap: Int = RemoteStateDocument.maxFieldBytes) throws -> String? {
            try row.decodeIfPresent(VenueText.self, forKey: key)?.text
                .map { RemoteStateDocument.truncated($0, toUTF8Bytes: cap) }
        }
        func name(_ key: CodingKeys) throws -> String? {
            try row.decodeIfPresent(VenueModeName.self, forKey: key)?.name
                .map { RemoteStateDocument.truncated($0, toUTF8Bytes: RemoteStateDocument.maxFieldBytes) }
        }
        func measurement(_ key: CodingKeys) throws -> Double? {
            try row.decodeIfPresent(VenueMeasurement.self, forKey: key)?.value
        }
        snapshot = RemoteSnapshot(
            id: try text(.id), globalMode: try name(.globalMode), mode: try name(.mode),
            message: try text(.message, cap: RemoteStateDocument.maxMessageBytes),
            temperature: try measurement(.temperature), humidity: try measurement(.humidity),
            wind: try text(.wind), forecast: try text(.forecast), lastUpdated: try text(.lastUpdated),
            evacuationRoute: try text(.evacuationRoute, cap: RemoteStateDocument.maxMessageBytes))
        let held = [CodingKeys.globalMode, .mode].compactMap { key -> String? in
            guard let written = (try? row.decodeIfPresent(VenueModeName.self, forKey: key))?.written else {
                return nil
            }
            return "\"\(key.rawValue)\": \(written)"
        }
        unknownMode = snapshot.trackMode == nil && !held.isEmpty ? held.joined(separator: ", ") : nil
    }
}

/// A mode name (`global_mode`, `mode`): only a string is one; a number, boolean, array or object
/// names no mode (`{"global_mode": 5, "mode": "RED"}` is red_flag, as is
/// `{"global_mode": "PURPLE", "mode": "RED"}`: `global_mode` names nothing known, so `mode` is read).
struct VenueModeName: Decodable {
    let name: String?
    /// What the field holds, for an `unknown_mode` failure: a string quoted with every scalar outside
    /// printable ASCII escaped (`"EVAC\u{200b}UATION"`, so an invisible or look-alike letter shows),
    /// another value as its kind; nil for null and the empty string, which hold no name at all.
    let written: String?

    init(from decoder: any Decoder) throws {
        let value = try decoder.singleValueContainer().decode(RemoteJSON.self)
        switch value {
        case .string(let text):
            name = text
            written = text.isEmpty ? nil : Self.quoted(text)
        case .null:
            (name, written) = (nil, nil)
        case .number(let literal):
            (name, written) = (nil, "a number (\(literal.prefix(32)))")
        default:
            (name, written) = (nil, value.kindName)
        }
    }

    /// `text` cut to 64 scalars, in quotes, with `"`, `\\` and every scalar outside printable ASCII
    /// written as `\u{…}`.
    static func quoted(_ text: String) -> String {
        var result = "\""
        for (index, scalar) in text.unicodeScalars.enumerated() {
            guard index < 64 else {
                result += "…"
                break
            }
            if (0x20..<0x7F).contains(scalar.value), scalar != "\"", scalar != "\\" {
                result.unicodeScalars.append(scalar)
            } else {
                result += "\\u{\(String(scalar.value, radix: 16))}"
            }
        }
        return result + "\""
    }
}

/// A text field: a string, or a number's literal as written (`"id": 7` is "7", `"wind": 1e999`
/// is "1e999"); other types count as missing.
struct VenueText: Decodable {
    let text: String?

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let string = try? container.decode(String.self) {
            text = string
        } else if case .number(let literal)? = try? container.decode(RemoteJSON.self) {
            text = literal
        } else {
            text = nil
        }
    }
}

/// `temperature`, `humidity`: a finite number, given as a number or as a string holding one
/// (`"40"`, `" 21.5 "`), with or without the unit GeoRacing's server writes (`"11.3°C"`, `"80%"`);
/// out of range (`1e400`), NaN, `"--°C"` or another type counts as missing.
struct VenueMeasurement: Decodable {
    let value: Double?

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let parsed: Double? =
            if let number = try? container.decode(Double.self) {
                number
            } else if let string = try? container.decode(String.self) {
                Self.number(in: string)
            } else {
                nil
            }
        value = parsed.flatMap { $0.isFinite ? $0 : nil }
    }

    /// The number in `text`, after one trailing unit (°C, ºC, °, %) and the spaces around it.
    static func number(in text: String) -> Double? {
        var trimmed = Substring(text.trimmingCharacters(in: .whitespaces))
        for unit in ["°C", "ºC", "°", "%"] where trimmed.hasSuffix(unit) {
            trimmed = trimmed.dropLast(unit.count)
            break
        }
        return Double(trimmed.trimmingCharacters(in: .whitespaces))
    }
}
