import CircuitState
import NIOCore

/// systemd's STATUS= line as a hub output: the mode, its source and zone, and the beacons heard,
/// at most one line a second (`KeyedCoalescer`, the latest at the end of a storm), one datagram
/// on the hub's loop each.
final class SystemdStatusOutput: HubOutput {
    private let lines: KeyedCoalescer<SystemdNotifier.StatusKey, String>

    init(notifier: SystemdNotifier, eventLoop: any EventLoop) {
        lines = KeyedCoalescer(eventLoop: eventLoop, interval: .seconds(1)) { _, line, _ in
            _ = notifier.status(line)
        }
    }

    func receive(_ event: HubEvent) {
        guard case .published(let publication) = event else { return }
        lines.offer(Self.line(publication), for: .status)
    }

    static func line(_ publication: Publication) -> String {
        let state = publication.state
        return """
            \(state.decision.modeName) (\(state.source.rawValue)\(state.zone.map { " zone \($0)" } ?? "")), \
            \(publication.beaconsHeard) beacons
            """
    }
}
