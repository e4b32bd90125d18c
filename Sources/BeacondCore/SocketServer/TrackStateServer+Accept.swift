import Glibc
import Logging
import NIOCore
import NIOPosix

extension TrackStateServer {
    /// Starts the thread that accepts on `descriptor` (`SocketAcceptLoop`). Each accepted batch
    /// comes back to the hub's event loop, where each connection becomes a channel.
    func startAccepting(on descriptor: CInt) throws(WakeSignal.Failure) {
        let acceptLoop = try SocketAcceptLoop(listener: descriptor)
        let loop = eventLoop
        let ended = BlockingThreadBridge.start(on: loop) { [self] in
            try acceptLoop.run(
                accepted: { connections in loop.execute { self.adopt(connections) } },
                exhausted: { code, delay in loop.execute { self.acceptFailed(code, pausedForMillis: delay) } })
        }
        ended.whenFailure { [logger] error in
            logger.error("stopped accepting clients on \(self.path): \(error)")
        }
        listener = (descriptor, acceptLoop, ended)
    }

    /// Stops the accept thread, then closes the listening socket (an inherited one too: this
    /// process's copy). Completes on the loop once both are done.
    func stopAccepting() -> EventLoopFuture<Void> {
        guard let listener else { return eventLoop.makeSucceededVoidFuture() }
        self.listener = nil
        listener.acceptLoop.stop()
        return listener.ended.recover { _ in }.map { _ = Glibc.close(listener.descriptor) }
    }

    /// Hands each accepted connection to NIO as a channel on the hub's loop. A connection that
    /// arrives while the server stops is still answered (with a bye) by `initialize`.
    private func adopt(_ connections: [SocketAcceptLoop.Connection]) {
        for connection in connections {
            let uid = connection.uid ?? ClientRoster.unknownUID
            bootstrap(uid: uid, descriptor: connection.descriptor)
                .withConnectedSocket(connection.descriptor)
                .whenFailure { [logger, logLimiter] error in
                    logger.limited(
                        limiter: logLimiter, .notice, "client.adopt", "cannot set up a client connection: \(error)")
                }
        }
    }

    /// An accept failed for want of descriptors or memory: accepting pauses for `delay` ms (the
    /// socket's `max_clients` and the unit's LimitNOFILE keep clients from being the cause: no
    /// client is closed for it). Counted and logged at a bounded rate.
    private func acceptFailed(_ code: CInt, pausedForMillis delay: Int32) {
        counters.acceptErrors += 1
        logger.limited(
            limiter: logLimiter, .warning, "client.accept",
            """
            cannot accept a client: \(errnoText(code)) (\(counters.acceptErrors) so far); accepting again in \
            \(delay) ms
            """)
    }
}
