import CircuitState
import Foundation

/// Why a venue API body is not a circuit state.
struct RemoteDocumentError: Error, CustomStringConvertible {
    let reason: String
    /// Whether the body failed to parse as JSON at all (rather than being JSON of the wrong shape).
    var isNotJSON = false
    /// Whether the body is a row whose mode names are all names beacond does not know.
    var isUnknownMode = false
    var description: String { reason }
}

/// Parses the venue API's `GET /api/state` body: the `circuit_state` row as a JSON
/// object, `{}` when there is no row. A top-level array is accepted: its first object is used.
///
/// - The mode fields (`global_mode`, `mode`) count only as strings, read by `TrackMode(remoteName:)`;
///   `global_mode` when it names a mode, else `mode`. A row whose mode fields hold something that
///   names no mode (`"PURPLE"`, `5`) is an `unknown_mode` failure, never a fetch of no mode.
/// - Text fields are cut to their caps at a UTF-8 boundary (`message` to `maxMessageBytes`, the
///   others to `maxFieldBytes`), so everything stored, published and saved is bounded.
/// - `temperature` and `humidity` are kept only when finite; out of range (`1e400`) they are nil.
/// - Duplicate keys (at any depth) make the body ambiguous: an `invalid_document` failure.
///
/// The body is parsed by `RemoteJSON` (strict) and decoded by `RemoteJSONDecoder` into
/// `VenueStateBody`; the loose field shapes are the Decodable types in `VenueStateFields.swift`.
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
        let body: VenueStateBody
        do {
            body = try RemoteJSONDecoder.decode(VenueStateBody.self, from: value)
        } catch {
            throw RemoteDocumentError(reason: error.message(whole: "the document"))
        }
        if let unknownMode = body.unknownMode {
            throw RemoteDocumentError(reason: unknownModeReason(unknownMode), isUnknownMode: true)
        }
        return body.snapshot
    }

    /// The failure's reason for a row whose mode names name nothing known (`VenueStateBody.unknownMode`).
    static func unknownModeReason(_ held: String) -> String { "unknown mode: \(held)" }

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
            lastUpdated: cut(snapshot.lastUpdated), evacuationRoute: cut(snapshot.evacuationRoute, maxMessageBytes))
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
}
