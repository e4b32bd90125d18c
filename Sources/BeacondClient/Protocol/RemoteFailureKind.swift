/// The kinds of failed fetch, each counted and logged once per transition.
package enum RemoteFailureKind: String, Hashable, Sendable, CaseIterable, Comparable {
    case connectionRefused = "connection_refused"
    case timeout
    case httpStatus = "http_status"
    case notJSON = "not_json"
    /// JSON, but not a circuit state (a number, an array whose first element is not an object).
    case invalidDocument = "invalid_document"
    /// A circuit state whose mode names name no mode beacond knows (`"PURPLE"`, `5`).
    case unknownMode = "unknown_mode"
    case tooLarge = "too_large"
    case tls
    /// A `file://` URL that cannot be read.
    case file
    /// Anything else on the way: DNS, a reset or closed connection.
    case transport

    package static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}
