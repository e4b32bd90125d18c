import NIOHTTP1

/// The request side of one connection of beacond's small HTTP servers (the web kiosk and the
/// metrics endpoint), after NIOHTTP1's decoder: a head is checked (`SmallHTTP.refusal`), a body is
/// never read, and the end hands the whole request over to be routed. Once a refusal is handed out
/// (or the handler closes it) the connection is closing, and whatever else arrives is ignored.
/// A whole request that arrives while the connection is not writable (a client sending requests
/// without reading the answers) is parked here until it is (`unpark`), so it is answered only
/// once the answer can go out.
package struct SmallHTTPRequestGate {
    /// What the handler does after a request part.
    package enum Step {
        /// Nothing yet: a head waiting for its end, a body part, or anything after a refusal.
        case wait
        /// Answer at once with this, and close the connection.
        case refuse(SmallHTTP.Refusal)
        /// A whole request to route now.
        case route(HTTPRequestHead)
        /// A whole request, parked until the connection is writable (`unpark`).
        case parked
    }

    /// The methods served; any other is refused with 405.
    let methods: [HTTPMethod]
    /// A refusal was handed out or the handler closed the connection: the rest is ignored.
    private(set) var closing = false
    private var pending: HTTPRequestHead?
    private var parked: HTTPRequestHead?

    package init(methods: [HTTPMethod]) {
        self.methods = methods
    }

    /// The step after `part`, on a connection that is `writable` now.
    package mutating func read(_ part: HTTPServerRequestPart, writable: Bool) -> Step {
        guard !closing else { return .wait }
        switch part {
        case .head(let head):
            if let refusal = SmallHTTP.refusal(of: head, methods: methods) {
                close()
                return .refuse(refusal)
            }
            pending = head
        case .body:
            break
        case .end:
            if let head = pending {
                pending = nil
                guard writable else {
                    parked = head
                    return .parked
                }
                return .route(head)
            }
        }
        return .wait
    }

    /// The answer to an error from the pipeline: a request NIOHTTP1's decoder refused (malformed,
    /// or headers beyond its limit) gets 400 unless the connection is already closing; nil when the
    /// connection is just to be closed.
    package mutating func refusal(after error: any Error) -> SmallHTTP.Refusal? {
        guard error is HTTPParserError, !closing else { return nil }
        close()
        return SmallHTTP.Refusal(status: .badRequest, text: "bad request\n", extraHeaders: [])
    }

    /// The parked request, once the connection is `writable`; nil otherwise or when none waits.
    package mutating func unpark(writable: Bool) -> HTTPRequestHead? {
        guard writable, !closing, let head = parked else { return nil }
        parked = nil
        return head
    }

    /// The connection is closing: what arrives from now on is ignored.
    mutating func close() {
        closing = true
        pending = nil
        parked = nil
    }
}
