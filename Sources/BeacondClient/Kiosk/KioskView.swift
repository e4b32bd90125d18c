import CircuitState

/// What a kiosk shows, as one value: computed from the daemon's latest state and the connection
/// to it, drawn by the terminal kiosk and sent as JSON to the browser page, so both show the
/// same words (docs/kiosk.md).
///
/// Safety rules: anything but a state from a reachable daemon is NO SIGNAL; an unknown mode (a
/// newer daemon's) is NO SIGNAL too; a stale race-control state says STALE with its age; text
/// from outside is stripped of control characters before it is shown.
package struct KioskView: Hashable, Sendable {
    /// The flag drawn: each mode's colour and letters.
    package enum Flag: String, Hashable, Sendable, CaseIterable {
        case green, yellow, vsc
        case safetyCar = "safety_car"
        case red, evacuation
        case noSignal = "no_signal"

        /// The mode in large letters.
        package var headline: String {
            switch self {
            case .green: "GREEN"
            case .yellow: "YELLOW"
            case .vsc: "VSC"
            case .safetyCar: "SC"
            case .red: "RED FLAG"
            case .evacuation: "EVACUATE"
            case .noSignal: "NO SIGNAL"
            }
        }

        /// The flag for a protocol `mode`; nil for `unknown` and for modes this version does not know.
        init?(mode: String) {
            switch mode {
            case "normal": self = .green
            case "yellow_flag": self = .yellow
            case "vsc": self = .vsc
            case "safety_car": self = .safetyCar
            case "red_flag": self = .red
            case "evacuation": self = .evacuation
            default: return nil
            }
        }
    }

    /// Where the kiosk stands with the daemon.
    package enum Link: Hashable, Sendable {
        /// Connected; `state` is the daemon's latest.
        case connected(StateMessage)
        /// Not connected (never yet, or lost) since wall-clock `since` (Unix microseconds), and
        /// why, in words.
        case unreachable(since: Int64, reason: String)

        /// Follows `event` of the daemon's feed at wall-clock time `now`: a state connects; a loss
        /// is unreachable since the first loss (repeated failed attempts keep its time).
        package mutating func apply(_ event: TrackStateFeed.Event, now: Int64) {
            switch event {
            case .connected(let state), .state(let state):
                self = .connected(state)
            case .lost(let reason):
                if case .unreachable(let since, _) = self {
                    self = .unreachable(since: since, reason: reason)
                } else {
                    self = .unreachable(since: now, reason: reason)
                }
            }
        }
    }

    package var flag: Flag
    /// The mode in large letters: `flag.headline`.
    package var headline: String { flag.headline }
    /// The plain-text status line: "RED FLAG", "NO SIGNAL", "NO SIGNAL — daemon unreachable".
    package var status: String
    /// Lines under the mode (zone, source, race control's message, age), already stripped of
    /// control characters; the renderer cuts them to its width.
    package var details: [String]
    /// Evacuation flashes (red and white, about 1 Hz) unless the kiosk runs `--steady`.
    package var flashes: Bool { flag == .evacuation }

    /// The view of `link` at wall-clock time `now` (Unix microseconds).
    package init(link: Link, now: Int64) {
        switch link {
        case .unreachable(let since, let reason):
            flag = .noSignal
            status = "NO SIGNAL — daemon unreachable"
            details = [
                "No contact with beacond for \(Self.duration(micros: now.subtractingSaturating(since)))",
                KioskText.stripped(reason, limit: Self.detailLimit),
                "Reconnecting…",
            ]
        case .connected(let state):
            guard let flag = Flag(mode: state.mode) else {
                self.flag = .noSignal
                status = "NO SIGNAL"
                details = Self.noSignalDetails(state, now: now)
                return
            }
            self.flag = flag
            status = flag.headline
            details = Self.details(state, now: now)
        }
    }

    /// The longest detail line kept, in characters, before the renderer cuts it to the screen.
    static let detailLimit = 200

    private static func details(_ state: StateMessage, now: Int64) -> [String] {
        var lines: [String] = []
        if let zone = state.zone {
            lines.append(zoneLine(zone, name: state.zoneName))
        } else if state.source == "remote" {
            lines.append("Whole circuit")
        }
        switch state.source {
        case "beacon":
            lines.append(state.beacon?.signed == true ? "Source: track beacon, signed" : "Source: track beacon")
        case "remote": lines.append("Source: race control")
        default: break
        }
        lines += remoteLines(state, now: now)
        lines.append("Showing for \(duration(micros: now.subtractingSaturating(state.time.micros)))")
        return lines
    }

    /// Neither beacons nor race control say anything: say what is missing.
    private static func noSignalDetails(_ state: StateMessage, now: Int64) -> [String] {
        var lines = ["No track beacon or race control state"]
        lines += remoteLines(state, now: now)
        if let scanner = scannerLine(state.scanner) { lines.append(scanner) }
        return lines
    }

    /// Why no beacon can be heard, in words; nil while the scanner is up.
    static func scannerLine(_ scanner: ScannerStatus) -> String? {
        switch scanner.state {
        case .up: nil
        case .down: "Bluetooth scanner down: no beacon can be heard"
        case .none where scanner.backend == "replay": "Replay finished: the capture has no more beacons"
        case .none: "No Bluetooth scanner running"
        }
    }

    /// Race control's message, and its freshness when it is not fresh.
    private static func remoteLines(_ state: StateMessage, now: Int64) -> [String] {
        guard let remote = state.remote else { return [] }
        var lines: [String] = []
        if let message = remote.message {
            let text = KioskText.stripped(message, limit: detailLimit)
            if !text.isEmpty { lines.append("Race control: \(text)") }
        }
        if remote.latched { lines.append("Evacuation latched by race control") }
        if !remote.fresh {
            // The daemon publishes when the remote state goes stale, and again when it is fresh:
            // while it is stale, its age keeps growing from what this message said. Both numbers came
            // from a socket: the sum saturates.
            let since = max(0, now.subtractingSaturating(state.time.micros))
            let age = remote.age.flatMap(micros(seconds:)).map { $0.addingSaturating(since) }
            lines.append("Race control STALE" + (age.map { " — last update \(duration(micros: $0)) ago" } ?? ""))
        }
        return lines
    }

    private static func zoneLine(_ zone: Int, name: String?) -> String {
        guard let name, case let text = KioskText.stripped(name, limit: detailLimit), !text.isEmpty else {
            return "Zone \(zone)"
        }
        return "Zone \(zone) — \(text)"
    }

    /// Seconds from outside as microseconds, clamped to Int64; nil when not a number.
    static func micros(seconds: Double) -> Int64? {
        guard !seconds.isNaN else { return nil }
        let micros = (seconds * 1_000_000).rounded()
        if micros >= 9.2e18 { return .max }
        if micros <= -9.2e18 { return .min }
        return Int64(micros)
    }

    /// "12 s", "3 min 12 s", "2 h 05 min"; negative durations (a clock stepped back) count as 0.
    static func duration(micros: Int64) -> String {
        let seconds = max(0, micros) / 1_000_000
        if seconds < 60 { return "\(seconds) s" }
        if seconds < 3600 { return "\(seconds / 60) min \(seconds % 60) s" }
        let minutes = (seconds % 3600) / 60
        return "\(seconds / 3600) h \(minutes < 10 ? "0" : "")\(minutes) min"
    }
}

/// Text from outside, made fit to draw: what is never drawn (`isHidden`: control characters, bidi
/// controls, line separators, format characters, unassigned code points) removed (tabs and line
/// breaks become spaces), runs of spaces folded, and the result cut to `limit` characters with a
/// trailing "…". Both kiosks use it: the view (`KioskView`, which the web kiosk sends as it is)
/// and the terminal's renderer (`KioskCells`).
package enum KioskText {
    /// True for the scalars a kiosk never shows: C0, DEL and C1 controls, bidi controls and line
    /// separators (`TerminalText.needsEscape`), format characters (U+200B–200F, U+061C, U+FEFF,
    /// U+00AD, U+2060–2064, …: invisible, and some reorder or join the text around them),
    /// unassigned code points and surrogates.
    package static func isHidden(_ scalar: Unicode.Scalar) -> Bool {
        if TerminalText.needsEscape(scalar) { return true }
        switch scalar.properties.generalCategory {
        case .format, .unassigned, .surrogate, .lineSeparator, .paragraphSeparator, .control: return true
        default: return false
        }
    }

    package static func stripped(_ text: String, limit: Int) -> String {
        var result = ""
        var count = 0
        var lastWasSpace = true
        for scalar in text.unicodeScalars {
            let isSpace = scalar == " " || scalar == "\t" || scalar == "\n" || scalar == "\r"
            if isSpace {
                if lastWasSpace { continue }
                lastWasSpace = true
                result.unicodeScalars.append(" ")
            } else {
                if isHidden(scalar) { continue }
                lastWasSpace = false
                result.unicodeScalars.append(scalar)
            }
            count += 1
            if count > limit {
                result.unicodeScalars.removeLast()
                return trimmedTrailingSpace(result) + "…"
            }
        }
        return trimmedTrailingSpace(result)
    }

    private static func trimmedTrailingSpace(_ text: String) -> String {
        var text = text
        while text.unicodeScalars.last == " " { text.unicodeScalars.removeLast() }
        return text
    }
}
