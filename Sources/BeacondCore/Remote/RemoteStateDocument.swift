import CircuitState
import Foundation

/// Why a venue API body is not a circuit state.
struct RemoteDocumentError: Error, CustomStringConvertible {
    let reason: String
    /// Whether the body failed to parse as JSON at all (rather than being JSON of the wrong shape).
    var isNotJSON = false
    var description: String { reason }
}

/// Parses the venue API's `GET /api/state` body: the `circuit_state` row as a JSON
/// object, `{}` when there is no row. A top-level array is accepted: its first object is used.
///
/// - The mode fields (`global_mode`, `mode`) count only as strings; a number there is no mode.
/// - Text fields are cut to their caps at a UTF-8 boundary (`message` to `maxMessageBytes`, the
///   others to `maxFieldBytes`), so everything stored, published and saved is bounded.
/// - `temperature` and `humidity` are kept only when finite; out of range (`1e400`) they are nil.
/// - Duplicate keys (at any depth) make the body ambiguous: an `invalid_document` failure.
enum RemoteStateDocument {
    /// The longest `message` kept, UTF-8 bytes.
    static let maxMessageBytes = 1024
    /// The longest `id`, `global_mode`, `mode`, `wind`, `forecast` and `last_updated` kept, UTF-8 bytes.
    static let maxFieldBytes = 128

    static func snapshot(fromBody body: Data) throws -> RemoteSnapshot {
        let value: RemoteJSON
        do {
            value = try RemoteJSON.parse(Array(body))
        } catch {
            if error.isWellFormed { throw RemoteDocumentError(reason: "body refused: \(error)") }
            throw RemoteDocumentError(reason: "body is not JSON: \(error)", isNotJSON: true)
        }
        return try snapshot(fromJSON: value)
    }

    static func snapshot(fromJSON value: RemoteJSON) throws -> RemoteSnapshot {
        let object: RemoteJSON
        switch value {
        case .object:
            object = value
        case .array(let elements):
            guard let first = elements.first else { return RemoteSnapshot() }
            guard case .object = first else {
                throw RemoteDocumentError(reason: "the array's first element is not an object")
            }
            object = first
        default:
            throw RemoteDocumentError(reason: "expected a JSON object")
        }
        return RemoteSnapshot(
            id: text(object["id"]), globalMode: name(object["global_mode"]), mode: name(object["mode"]),
            message: text(object["message"], cap: maxMessageBytes), temperature: number(object["temperature"]),
            humidity: number(object["humidity"]), wind: text(object["wind"]), forecast: text(object["forecast"]),
            lastUpdated: text(object["last_updated"]))
    }

    /// `snapshot` with every text field cut to its cap and non-finite numbers dropped: what the
    /// parser would have produced. The state file writer applies it, so its size bound holds.
    static func capped(_ snapshot: RemoteSnapshot) -> RemoteSnapshot {
        func cut(_ value: String?, _ cap: Int = maxFieldBytes) -> String? {
            value.map { truncated($0, toUTF8Bytes: cap) }
        }
        func finite(_ value: Double?) -> Double? { value.flatMap { $0.isFinite ? $0 : nil } }
        return RemoteSnapshot(
            id: cut(snapshot.id), globalMode: cut(snapshot.globalMode), mode: cut(snapshot.mode),
            message: cut(snapshot.message, maxMessageBytes), temperature: finite(snapshot.temperature),
            humidity: finite(snapshot.humidity), wind: cut(snapshot.wind), forecast: cut(snapshot.forecast),
            lastUpdated: cut(snapshot.lastUpdated))
    }

    /// The longest prefix of `text` of at most `cap` UTF-8 bytes that ends on a scalar boundary.
    static func truncated(_ text: String, toUTF8Bytes cap: Int) -> String {
        guard text.utf8.count > cap else { return text }
        let utf8 = Array(text.utf8)
        var end = max(0, cap)
        // Back off continuation bytes (10xxxxxx) so no scalar is split.
        while end > 0, utf8[end] & 0xC0 == 0x80 { end -= 1 }
        return String(decoding: utf8[..<end], as: UTF8.self)
    }

    /// A mode name: only a string is one.
    private static func name(_ value: RemoteJSON?) -> String? {
        guard case .string(let string)? = value else { return nil }
        return truncated(string, toUTF8Bytes: maxFieldBytes)
    }

    /// A string, or a number's literal; nil for null, missing or other types.
    private static func text(_ value: RemoteJSON?, cap: Int = maxFieldBytes) -> String? {
        switch value {
        case .string(let string)?: truncated(string, toUTF8Bytes: cap)
        case .number(let literal)?: truncated(literal, toUTF8Bytes: cap)
        default: nil
        }
    }

    /// A finite number, from a number or a string holding one; nil otherwise (1e400 included).
    private static func number(_ value: RemoteJSON?) -> Double? {
        let parsed: Double? = switch value {
        case .number(let literal)?: Double(literal)
        case .string(let string)?: Double(string.trimmingCharacters(in: .whitespaces))
        default: nil
        }
        return parsed.flatMap { $0.isFinite ? $0 : nil }
    }
}
