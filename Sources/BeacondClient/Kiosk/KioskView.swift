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

        /// The mode in large letters, in English.
        package var headline: String { KioskCatalogue.english.template(phrase) }

        /// The catalogue's headline for this flag.
        package var phrase: KioskPhrase {
            switch self {
            case .green: .green
            case .yellow: .yellow
            case .vsc: .vsc
            case .safetyCar: .safetyCar
            case .red: .red
            case .evacuation: .evacuation
            case .noSignal: .noSignal
            }
        }

        /// The protocol mode this flag shows; nil for NO SIGNAL (no mode, or one unknown).
        package var mode: String? {
            switch self {
            case .green: "normal"
            case .yellow: "yellow_flag"
            case .vsc: "vsc"
            case .safetyCar: "safety_car"
            case .red: "red_flag"
            case .evacuation: "evacuation"
            case .noSignal: nil
            }
        }

        /// The flag for a protocol `mode`; nil for `unknown` and for modes this version does not know.
        init?(mode: String) {
            guard let flag = Self.allCases.first(where: { $0.mode == mode }) else { return nil }
            self = flag
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
    /// The language of the words (`KioskCatalogue.language`).
    package var language: String
    /// The mode in large letters, in `language`.
    package var headline: String
    /// The plain-text status line: "RED FLAG", "NO SIGNAL", "NO SIGNAL — daemon unreachable".
    package var status: String
    /// The evacuation view's lines, under the headline and larger than the details: where to go
    /// (the exit, its distance, race control's route) or, with no exit configured, to follow the
    /// stewards. Empty for every other flag.
    package var guidance: [String]
    /// The arrow to the exit, drawn beside the headline during an evacuation; nil otherwise, and
    /// always nil when no direction is configured: no arrow is ever guessed.
    package var arrow: BlockArrow.Direction?
    /// Lines under the mode (zone, source, race control's message, temperature, age), already
    /// stripped of control characters; the renderer cuts them to its width.
    package var details: [String]
    /// Evacuation flashes (red and white, about 1 Hz) unless the kiosk runs `--steady`.
    package var flashes: Bool { flag == .evacuation }

    /// The view of `link` at wall-clock time `now` (Unix microseconds), in `catalogue`'s words;
    /// `exit` is this kiosk's exit, for the evacuation view.
    package init(link: Link, now: Int64, catalogue: KioskCatalogue = .english, exit: KioskExit = KioskExit()) {
        let words = Words(catalogue: catalogue, now: now)
        language = catalogue.language
        guidance = []
        arrow = nil
        switch link {
        case .unreachable(let since, let reason):
            flag = .noSignal
            status = catalogue.text(.daemonUnreachable)
            details = [
                catalogue.text(.unreachableFor, ["duration": Self.duration(micros: now.subtractingSaturating(since))]),
                KioskText.stripped(reason, limit: Self.detailLimit),
                catalogue.text(.reconnecting),
            ]
        case .connected(let state):
            let flag = Flag(mode: state.mode) ?? .noSignal
            self.flag = flag
            status = catalogue.text(flag.phrase)
            if state.source == "remote", state.remote?.fresh == false {
                status += " — " + catalogue.text(.stale)
            }
            details = flag == .noSignal ? words.noSignalDetails(state) : words.details(state)
            if flag == .evacuation {
                (guidance, arrow) = words.evacuation(state, exit: exit)
            }
        }
        headline = catalogue.text(flag.phrase)
    }

    /// The longest detail line kept, in characters, before the renderer cuts it to the screen.
    static let detailLimit = 200

    /// A catalogue's words for a state.
    private struct Words {
        let catalogue: KioskCatalogue
        let now: Int64

        func details(_ state: StateMessage) -> [String] {
            var lines: [String] = []
            if let zone = state.zone {
                lines.append(zoneLine(zone, name: state.zoneName))
            } else if state.source == "remote" {
                lines.append(catalogue.text(.wholeCircuit))
            }
            switch state.source {
            case "beacon":
                lines.append(catalogue.text(state.beacon?.signed == true ? .sourceBeaconSigned : .sourceBeacon))
            case "remote": lines.append(catalogue.text(.sourceRemote))
            default: break
            }
            lines += remoteLines(state)
            if let temperature = KioskView.temperature(state) {
                lines.append(catalogue.text(.temperature, ["celsius": temperature]))
            }
            let shown = KioskView.duration(micros: now.subtractingSaturating(state.time.micros))
            lines.append(catalogue.text(.showingFor, ["duration": shown]))
            return lines
        }

        /// Neither beacons nor race control say anything: say what is missing.
        func noSignalDetails(_ state: StateMessage) -> [String] {
            var lines = [catalogue.text(.nothingHeard)]
            lines += remoteLines(state)
            if let scanner = KioskView.scannerPhrase(state.scanner) { lines.append(catalogue.text(scanner)) }
            return lines
        }

        /// Where to go: the exit (name, distance) and race control's route, or the stewards.
        func evacuation(_ state: StateMessage, exit: KioskExit) -> ([String], BlockArrow.Direction?) {
            var lines: [String] = []
            if let name = exit.name {
                let shown = KioskText.stripped(name, limit: KioskExit.maxNameLength)
                if let distance = exit.distanceMetres {
                    lines.append(catalogue.text(.exitDistance, ["name": shown, "distance": String(distance)]))
                } else {
                    lines.append(catalogue.text(.exit, ["name": shown]))
                }
            }
            if let route = state.remote?.evacuationRoute {
                let text = KioskText.stripped(route, limit: KioskView.detailLimit)
                if !text.isEmpty { lines.append(catalogue.text(.route, ["route": text])) }
            }
            if exit.isEmpty { lines.append(catalogue.text(.followStewards)) }
            return (lines, exit.direction)
        }

        /// Race control's message, and its freshness when it is not fresh.
        private func remoteLines(_ state: StateMessage) -> [String] {
            guard let remote = state.remote else { return [] }
            var lines: [String] = []
            if let message = remote.message {
                let text = KioskText.stripped(message, limit: KioskView.detailLimit)
                if !text.isEmpty { lines.append(catalogue.text(.raceControlMessage, ["message": text])) }
            }
            if remote.latched { lines.append(catalogue.text(.evacuationLatched)) }
            if !remote.fresh {
                // The daemon publishes when the remote state goes stale, and again when it is fresh:
                // while it is stale, its age keeps growing from what this message said. Both numbers
                // came from a socket: the sum saturates.
                let since = max(0, now.subtractingSaturating(state.time.micros))
                let age = remote.age.flatMap(KioskView.micros(seconds:)).map { $0.addingSaturating(since) }
                if let age {
                    lines.append(catalogue.text(.raceControlStaleAge, ["age": KioskView.duration(micros: age)]))
                } else {
                    lines.append(catalogue.text(.raceControlStale))
                }
            }
            return lines
        }

        private func zoneLine(_ zone: Int, name: String?) -> String {
            guard let name, case let text = KioskText.stripped(name, limit: KioskView.detailLimit), !text.isEmpty
            else {
                return catalogue.text(.zone, ["zone": String(zone)])
            }
            return catalogue.text(.zoneNamed, ["zone": String(zone), "name": text])
        }
    }

    /// Why no beacon can be heard; nil while the scanner is up. Degraded (one of several adapters
    /// down) is staff's business, not the crowd's: the others still hear every beacon.
    static func scannerPhrase(_ scanner: ScannerStatus) -> KioskPhrase? {
        switch scanner.state {
        case .up, .degraded: nil
        case .down: .scannerDown
        case .none where scanner.backend == "replay": .replayFinished
        case .none: .noScanner
        }
    }

    /// The temperature to show, whole °C: the beacon's (v1 frames carry it) for a beacon's state,
    /// else race control's; nil when neither has one, or race control's is not a sane number.
    static func temperature(_ state: StateMessage) -> String? {
        if state.source == "beacon", let celsius = state.beacon?.temperature { return String(celsius) }
        guard let celsius = state.remote?.temperature, celsius.isFinite, abs(celsius) < 1000 else { return nil }
        return String(Int(celsius.rounded()))
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
