import ArgumentParser
import BeacondClient
import BeacondCore
import CircuitState
import Foundation

/// `beacond report --socket`: reads a running daemon's history page by page (`history`
/// requests), then its status for the counts, and makes the report's model of them.
enum DaemonHistory {
    static func report(socket: String, since: Int64?, timeZone: String) throws -> RaceReport {
        do {
            let client = try TrackStateClient(path: socket)
            defer { client.close() }
            _ = try client.handshake()
            var stretches: [RaceStretch] = []
            var query = HistoryQuery(sinceSeconds: since)
            var last: HistoryMessage
            var skipped = 0
            repeat {
                last = try page(client, query, socket: socket)
                stretches += last.stretches
                skipped += last.skipped
                query.after = last.next
            } while last.more
            let status = try client.request(ClientRequest.status.commandLine ?? "", reply: "status").status(
                path: socket)
            let start = last.since ?? stretches.map(\.start).min() ?? last.now
            var report = RaceReport(
                title: "the daemon at \(socket)", timeZone: timeZone, start: start, end: last.now,
                stretches: stretches)
            report.droppedStretches = skipped
            report.countsSince = "since the daemon started, \(Int(status.uptime)) s ago"
            report.counts = RaceReport.Counts(
                reports: status.hci?.reports ?? 0, signals: status.counters.signals,
                rejectedFrames: status.counters.rejectedFrames,
                forgedFrames: status.signed?.rejected.values.reduce(0, +) ?? 0, contests: status.counters.contests,
                changes: stretches.filter { $0.row == .published }.count)
            return report
        } catch {
            printError("beacond report: error: \(error)")
            throw ExitCode(1)
        }
    }

    /// One page; a refusal for asking too often is waited out (at most 10 requests a second).
    private static func page(
        _ client: TrackStateClient, _ query: HistoryQuery, socket: String
    ) throws -> HistoryMessage {
        var refusals = 0
        while true {
            do throws(TrackStateClient.ClientError) {
                let reply = try client.request(query.commandLine, reply: "history")
                guard case .history(let message) = try reply.decoded(path: socket) else {
                    throw TrackStateClient.ClientError.unreadable(
                        path: socket, type: "history", reason: "not a history message")
                }
                return message
            } catch {
                guard case .serverError(_, let message) = error, message.hasPrefix("too many"), refusals < 5 else {
                    throw error
                }
                refusals += 1
                waitForTheWindow(client)
            }
        }
    }

    /// Lets the daemon's one-second request window pass: reads (and skips) what it pushes meanwhile.
    private static func waitForTheWindow(_ client: TrackStateClient) {
        let until = MonotonicClock.micros() + 1_000_000
        while true {
            let left = until - MonotonicClock.micros()
            guard left > 0 else { return }
            do {
                _ = try client.readServerMessage(timeout: Double(left) / 1_000_000)
            } catch {
                return
            }
        }
    }
}
