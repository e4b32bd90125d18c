import CircuitState
import Foundation

/// The venue API's body (docs/fusion.md): the `circuit_state` row as an object, or an array whose
/// first element is the row (`[]` is no row, like `{}`).
struct VenueStateBody: Decodable {
    let snapshot: RemoteSnapshot

    init(from decoder: any Decoder) throws {
        guard var rows = try? decoder.unkeyedContainer() else {
            snapshot = try VenueStateRow(from: decoder).snapshot
            return
        }
        snapshot = rows.isAtEnd ? RemoteSnapshot() : try rows.decode(VenueStateRow.self).snapshot
    }
}

/// One `circuit_state` row. Every field is optional and loose: a field of an unexpected type counts
/// as missing rather than refusing the row (the venue's own types have varied), and text is cut to
/// `RemoteStateDocument`'s caps at a UTF-8 boundary. Only the row itself must be an object.
struct VenueStateRow: Decodable {
    let snapshot: RemoteSnapshot

    enum CodingKeys: String, CodingKey {
        case id, mode, message, temperature, humidity, wind, forecast
        case globalMode = "global_mode"
        case lastUpdated = "last_updated"
    }

    init(from decoder: any Decoder) throws {
        let row = try decoder.container(keyedBy: CodingKeys.self)
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
            wind: try text(.wind), forecast: try text(.forecast), lastUpdated: try text(.lastUpdated))
    }
}

/// A mode name (`global_mode`, `mode`): only a string is one; a number, boolean, array or object
/// counts as missing (`{"global_mode": 5, "mode": "RED"}` is red_flag).
struct VenueModeName: Decodable {
    let name: String?

    init(from decoder: any Decoder) throws {
        name = try? decoder.singleValueContainer().decode(String.self)
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
/// (`"40"`, `" 21.5 "`); out of range (`1e400`), NaN or another type counts as missing.
struct VenueMeasurement: Decodable {
    let value: Double?

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let parsed: Double? =
            if let number = try? container.decode(Double.self) {
                number
            } else if let string = try? container.decode(String.self) {
                Double(string.trimmingCharacters(in: .whitespaces))
            } else {
                nil
            }
        value = parsed.flatMap { $0.isFinite ? $0 : nil }
    }
}
