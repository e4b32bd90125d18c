import Glibc

/// Where `beacond watch` gets its status from: a running daemon's socket, or a capture replayed
/// in-process (`WatchReplay`).
package protocol WatchSource: AnyObject, Sendable {
    /// The title's name for it: the socket path, or the capture and its speed.
    var label: String { get }
    /// The status now; with `devices`, the other devices heard too. Blocks (at most a few seconds);
    /// called from one thread at a time. Throws why there is none, in words.
    func fetch(devices: Bool) throws(WatchSourceError) -> StatusMessage
    /// Lets go of the connection (the next `fetch` makes a new one).
    func close()
}

/// A source that plays to an end (the daemon's `WatchReplay`): `watch --once` waits for it.
package protocol FiniteWatchSource: WatchSource {
    /// Why it stopped early (a capture that cannot be read further); nil otherwise.
    var failed: String? { get }
}

extension StatusMessage {
    /// Whether a replay's status says it has played to its end (no scanner) or stopped on an error.
    package var replayIsFinished: Bool {
        scanner.state == .none || (scanner.state == .down && scanner.detail != nil)
    }
}

/// Why a source has no status: one sentence for the header and the error message.
package struct WatchSourceError: Error, CustomStringConvertible {
    package var description: String

    package init(_ description: String) {
        self.description = description
    }
}

/// A running daemon: one connection, kept open between requests and made again after a loss.
/// Only the watch's poller thread uses it (one `fetch` at a time), hence `@unchecked Sendable`.
// @unchecked Sendable: only the watch's poller thread uses it, one fetch at a time.
package final class DaemonWatchSource: WatchSource, @unchecked Sendable {
    package let path: String
    /// Seconds the daemon has to accept, greet and answer.
    package let timeout: Double
    private var client: TrackStateClient?

    package init(path: String, timeout: Double = 2) {
        self.path = path
        self.timeout = timeout
    }

    package var label: String { path }

    package func fetch(devices: Bool) throws(WatchSourceError) -> StatusMessage {
        do throws(TrackStateClient.ClientError) {
            let client = try connected()
            let request: ClientRequest = devices ? .statusWithDevices : .status
            let reply = try client.request(request.commandLine ?? "", reply: "status", timeout: timeout)
            return try reply.status(path: path)
        } catch {
            close()
            throw WatchSourceError(Self.describe(error))
        }
    }

    package func close() {
        client?.close()
        client = nil
    }

    private func connected() throws(TrackStateClient.ClientError) -> TrackStateClient {
        if let client { return client }
        let client = try TrackStateClient(path: path, timeout: timeout)
        _ = try client.handshake(timeout: timeout)
        self.client = client
        return client
    }

    private static func describe(_ error: TrackStateClient.ClientError) -> String {
        switch error {
        case .cannotConnect(_, let code) where code == ENOENT || code == ECONNREFUSED:
            "daemon unreachable: nobody listens on the socket (is beacond running?)"
        case .closed: "daemon unreachable: it closed the connection"
        default: "daemon unreachable: \(error)"
        }
    }
}
