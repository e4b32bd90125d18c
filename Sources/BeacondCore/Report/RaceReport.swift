import BLEPayload
import CircuitState

/// What `beacond report` draws: a race's stretches (`RaceRecorder`), the capture's scanner gaps,
/// and the counts its summary opens with.
package struct RaceReport: Sendable {
    /// The capture's file name (or the daemon's socket), for the title.
    package var title: String
    /// An IANA time zone name the page shows wall time in.
    package var timeZone: String
    /// Unix µs: the first and last instant drawn.
    package var start: Int64
    package var end: Int64
    package var stretches: [RaceStretch]
    /// Stretches the recorder's bounds dropped (the oldest first).
    package var droppedStretches = 0
    package var gaps: [Gap] = []
    package var counts = Counts()
    /// What the counts cover when it is not the report's span (a daemon's: since it started).
    package var countsSince: String?

    /// No advertising report at all for `RaceReport.gapThreshold` or longer: the scanner heard nothing.
    package struct Gap: Hashable, Sendable {
        package var start: Int64
        package var end: Int64
    }

    package struct Counts: Hashable, Sendable {
        package var reports = 0
        package var signals = 0
        /// Frames with the GeoRacing company id that are not valid frames.
        package var rejectedFrames = 0
        /// Signed frames that failed verification (bad tag, replayed, out of the clock window…).
        package var forgedFrames = 0
        package var contests = 0
        package var changes = 0

        package init(
            reports: Int = 0, signals: Int = 0, rejectedFrames: Int = 0, forgedFrames: Int = 0, contests: Int = 0,
            changes: Int = 0
        ) {
            self.reports = reports
            self.signals = signals
            self.rejectedFrames = rejectedFrames
            self.forgedFrames = forgedFrames
            self.contests = contests
            self.changes = changes
        }
    }

    /// A venue's scanner hears phones and beacons all the time: 10 s of silence is a gap.
    package static let gapThreshold: Int64 = 10_000_000

    package init(title: String, timeZone: String, start: Int64, end: Int64, stretches: [RaceStretch]) {
        self.title = title
        self.timeZone = timeZone
        self.start = start
        self.end = end
        self.stretches = stretches
    }

    /// How long the screens showed each mode (nil: no decision, NO SIGNAL), µs.
    package var publishedDurations: [(mode: TrackMode?, micros: Int64)] {
        var totals: [TrackMode?: Int64] = [:]
        for stretch in stretches where stretch.row == .published {
            totals[stretch.mode, default: 0] += max(0, stretch.end - stretch.start)
        }
        let order: [TrackMode?] = TrackMode.allCases.reversed() + [nil]
        return order.compactMap { mode in totals[mode].map { (mode, $0) } }
    }

    /// Evacuation stretches on any row, in time order.
    package var evacuations: [RaceStretch] {
        stretches.filter { $0.mode == .evacuation }.sorted { $0.start < $1.start }
    }
}

extension RaceReport {
    /// Replays `path` (and `remote`) as `replay --timeline` does, and records it.
    package static func fromCapture(
        path: String, remote: RemoteTimeline?, replay: TimelineReplay, title: String, timeZone: String,
        stretchLimit: Int = 2_000_000
    ) throws(CaptureError) -> RaceReport {
        let recording = CaptureRecording(limit: stretchLimit)
        let summary = try replay.fuse(path: path, remote: remote, observer: recording)
        return recording.report(summary: summary, title: title, timeZone: timeZone)
    }
}

/// Follows a capture's replay: the recorder, and the gaps between reports.
private final class CaptureRecording: FusionObserver {
    var recorder: RaceRecorder
    var gaps: [RaceReport.Gap] = []
    var firstHeard: Int64?
    var lastHeard: Int64?

    init(limit: Int) {
        recorder = RaceRecorder(limit: limit)
    }

    func heard(at time: Int64) {
        if let lastHeard, time.subtractingSaturating(lastHeard) >= RaceReport.gapThreshold {
            gaps.append(RaceReport.Gap(start: lastHeard, end: time))
        }
        if firstHeard == nil { firstHeard = time }
        lastHeard = max(lastHeard ?? time, time)
    }

    func ingested(_ key: OverrideKey, outcome: IngestOutcome) { recorder.ingested(key, outcome: outcome) }

    func evaluated(_ state: PublishedState, engine: FusionEngine) {
        recorder.observe(state, engine: engine)
    }

    var stopped: Bool { false }

    func report(summary: TimelineReplay.Summary, title: String, timeZone: String) -> RaceReport {
        let start = min(firstHeard ?? .max, recorder.firstTime ?? .max)
        let end = max(lastHeard ?? .min, recorder.lastTime ?? .min)
        recorder.finish(at: end)
        var report = RaceReport(
            title: title, timeZone: timeZone, start: start == .max ? 0 : start, end: end == .min ? 0 : end,
            stretches: recorder.stretches)
        report.droppedStretches = recorder.dropped
        report.gaps = gaps
        report.counts = RaceReport.Counts(
            reports: summary.reports, signals: summary.signals, rejectedFrames: summary.rejections,
            forgedFrames: summary.signatures.rejected.values.reduce(0, +), contests: summary.counters.contests,
            changes: summary.changes)
        return report
    }
}
