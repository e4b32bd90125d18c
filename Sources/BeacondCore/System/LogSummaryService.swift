import Logging
import NIOCore
import ServiceLifecycle

/// Writes the limiter's suppressed counts once a second, so a flood that stops still gets its
/// "suppressed N" line.
struct LogSummaryService: Service {
    let limiter: LogRateLimiter
    let logger: Logger
    /// Times the summaries (a task scheduled on it each second).
    let eventLoop: any EventLoop
    var interval: TimeAmount = .seconds(1)

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    try await eventLoop.wait(for: interval)
                } catch {
                    break
                }
                limiter.logSummaries(to: logger)
            }
        }
        limiter.logSummaries(to: logger)
    }
}
