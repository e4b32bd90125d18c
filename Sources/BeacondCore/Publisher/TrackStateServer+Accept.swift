import Logging
import NIOCore

extension TrackStateServer {
    /// For the listener: an accept that fails for want of descriptors (EMFILE…) pauses accepting
    /// (`AcceptBackoffHandler`) instead of NIO retrying at once; each is counted and logged at a
    /// bounded rate. (The socket's `max_clients` and the unit's LimitNOFILE keep clients from
    /// being the cause: no client is closed for it.)
    func acceptBackoff() -> AcceptBackoffHandler {
        AcceptBackoffHandler { [counters, logger, logLimiter] error, delay in
            counters.acceptErrors += 1
            logger.limited(
                limiter: logLimiter, .warning, "client.accept",
                """
                cannot accept a client: \(error) (\(counters.acceptErrors) so far); accepting again in \
                \(delay.nanoseconds / 1_000_000) ms
                """)
        }
    }
}
