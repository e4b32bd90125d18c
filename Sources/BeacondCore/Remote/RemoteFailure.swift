import AsyncHTTPClient
import Glibc
import NIOCore
import NIOPosix
import NIOSSL

/// One failed fetch: its kind and a short reason for logs, status and the hub.
struct RemoteFailure: Error, Hashable, Sendable, CustomStringConvertible {
    var kind: RemoteFailureKind
    var reason: String

    var description: String { reason }

    static func tooLarge() -> RemoteFailure {
        RemoteFailure(kind: .tooLarge, reason: "body over \(RemotePollerConfiguration.maxBodyBytes) bytes")
    }

    static func timedOut(after timeout: Duration) -> RemoteFailure {
        RemoteFailure(kind: .timeout, reason: "timed out after \(RemoteFailure.seconds(timeout)) s")
    }

    /// Sorts what AsyncHTTPClient, NIO and the parser throw into kinds.
    static func classify(_ error: any Error, timeout: Duration) -> RemoteFailure {
        switch error {
        case let failure as RemoteFailure:
            return failure
        case let document as RemoteDocumentError:
            let kind: RemoteFailureKind =
                document.isNotJSON ? .notJSON : document.isUnknownMode ? .unknownMode : .invalidDocument
            return RemoteFailure(kind: kind, reason: document.reason)
        case is NIOTooManyBytesError:
            return .tooLarge()
        case let client as HTTPClientError:
            switch client {
            case .deadlineExceeded, .readTimeout, .writeTimeout, .connectTimeout, .tlsHandshakeTimeout,
                .getConnectionFromPoolTimeout:
                return .timedOut(after: timeout)
            case .remoteConnectionClosed:
                return RemoteFailure(kind: .transport, reason: "the server closed the connection")
            default:
                return RemoteFailure(kind: .transport, reason: "HTTP client: \(client)")
            }
        case let connection as NIOConnectionError:
            if let dns = connection.dnsAError ?? connection.dnsAAAAError, connection.connectionErrors.isEmpty {
                return RemoteFailure(kind: .transport, reason: "cannot resolve \(connection.host): \(dns)")
            }
            if connection.connectionErrors.contains(where: { isRefused($0.error) }) {
                return RemoteFailure(
                    kind: .connectionRefused,
                    reason: "connection refused by \(connection.host):\(connection.port)")
            }
            if connection.connectionErrors.contains(where: { isTimeout($0.error) }) {
                return .timedOut(after: timeout)
            }
            return RemoteFailure(kind: .transport, reason: "cannot connect: \(connection)")
        case is NIOSSLError, is BoringSSLError, is NIOSSLExtraError:
            return RemoteFailure(kind: .tls, reason: "TLS: \(error)")
        default:
            if isRefused(error) { return RemoteFailure(kind: .connectionRefused, reason: "connection refused") }
            if isTimeout(error) { return .timedOut(after: timeout) }
            return RemoteFailure(kind: .transport, reason: "\(error)")
        }
    }

    private static func isRefused(_ error: any Error) -> Bool {
        if let io = error as? IOError { return io.errnoCode == ECONNREFUSED }
        return false
    }

    private static func isTimeout(_ error: any Error) -> Bool {
        if case ChannelError.connectTimeout = error { return true }
        if let io = error as? IOError { return io.errnoCode == ETIMEDOUT }
        return false
    }

    static func seconds(_ duration: Duration) -> String {
        let value = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        return value == value.rounded() ? String(Int64(value)) : String(value)
    }
}

/// The remote poller's `Backoff` policy: the delay before the next poll.
enum RemoteBackoff {
    /// Jitter takes up to this fraction off a backed-off delay, so pollers that failed
    /// together do not retry together.
    static let jitterFraction = 0.25
    /// However small `stale_after` is, retries are never closer together than this.
    static let minimumDelay = Duration.milliseconds(100)

    /// The longest delay after a failure: `interval × 6`, but at most `stale_after / 3`, so a race
    /// control that recovers is fetched again well before a kiosk's remote state would go stale,
    /// and never below `minimumDelay`.
    static func cap(interval: Duration, staleAfter: Duration) -> Duration {
        max(minimumDelay, min(interval * RemotePollerConfiguration.backoffCapFactor, staleAfter / 3))
    }

    /// The floor is the interval, or the cap when that is shorter; 25 % jitter.
    static func policy(interval: Duration, staleAfter: Duration) -> Backoff {
        Backoff(
            floor: micros(interval), cap: micros(cap(interval: interval, staleAfter: staleAfter)),
            jitter: jitterFraction)
    }

    /// After a success (`failures` 0) or a first failure: the floor. After n consecutive failures:
    /// floor × 2^(n-1), less up to 25 % jitter, within [floor, cap]. `random` is in [0, 1).
    static func delay(
        afterFailures failures: Int, interval: Duration, staleAfter: Duration,
        random: Double
    ) -> Duration {
        .microseconds(policy(interval: interval, staleAfter: staleAfter).delay(afterFailures: failures, random: random))
    }

    /// Whole microseconds, rounded down; saturates instead of trapping on an absurd value.
    static func micros(_ duration: Duration) -> Int64 {
        guard duration > .zero else { return 0 }
        let (seconds, attoseconds) = duration.components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000)
        let (total, carry) = whole.addingReportingOverflow(attoseconds / 1_000_000_000_000)
        return overflow || carry ? .max : total
    }
}
