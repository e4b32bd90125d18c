import CircuitState
import Logging
import ServiceLifecycle

/// Keeps the v3 senders' order marks in the state directory: saved within 5 s of a mark moving,
/// and once more at shutdown, after the sources stopped (it sits before them in the service group).
/// A crash loses at most the last 5 s of marks; the clock window bounds what that reopens
/// (docs/security.md).
struct SignedMarkService: Service {
    static let saveInterval: Int64 = 5_000_000

    let hub: TrackStateHub
    let file: SignedMarkFile
    let logger: Logger

    func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                while !Task.isCancelled {
                    try await hub.eventLoop.wait(for: .microseconds(Self.saveInterval))
                    await save()
                }
            }
        } catch is CancellationError {
            // Shutdown: the last save follows.
        }
        await save()
    }

    private func save() async {
        let hub = hub
        guard let marks = try? await hub.eventLoop.submit({ hub.signedMarksToSave() }).get() else { return }
        do {
            try file.save(marks)
        } catch {
            logger.limited(
                limiter: .shared, .warning, "signed.marks.save",
                "cannot save the v3 order marks: \(TerminalText.logged("\(error)"))", metadata: ["path": "\(file.path)"]
            )
        }
    }
}
