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
enum RemoteStateDocument {
    static func snapshot(fromBody body: Data) throws -> RemoteSnapshot {
        let value: Any
        do {
            value = try JSONSerialization.jsonObject(with: body, options: [.fragmentsAllowed])
        } catch {
            throw RemoteDocumentError(reason: "body is not JSON", isNotJSON: true)
        }
        return try snapshot(fromJSON: value)
    }

    static func snapshot(fromJSON value: Any) throws -> RemoteSnapshot {
        let object: [String: Any]
        if let dictionary = value as? [String: Any] {
            object = dictionary
        } else if let array = value as? [Any] {
            guard let first = array.first else { return RemoteSnapshot() }
            guard let dictionary = first as? [String: Any] else {
                throw RemoteDocumentError(reason: "the array's first element is not an object")
            }
            object = dictionary
        } else {
            throw RemoteDocumentError(reason: "expected a JSON object")
        }
        return RemoteSnapshot(
            id: text(object["id"]), globalMode: text(object["global_mode"]), mode: text(object["mode"]),
            message: text(object["message"]), temperature: number(object["temperature"]),
            humidity: number(object["humidity"]), wind: text(object["wind"]), forecast: text(object["forecast"]),
            lastUpdated: text(object["last_updated"]))
    }

    /// A string, or a number written as one; nil for null, missing or other types.
    private static func text(_ value: Any?) -> String? {
        switch value {
        case let string as String: string
        case let number as NSNumber: number.stringValue
        default: nil
        }
    }

    private static func number(_ value: Any?) -> Double? {
        switch value {
        case let number as NSNumber: number.doubleValue
        case let string as String: Double(string.trimmingCharacters(in: .whitespaces))
        default: nil
        }
    }
}
