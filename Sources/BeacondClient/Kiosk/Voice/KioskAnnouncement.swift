/// What the kiosk says aloud for a flag (docs/kiosk.md, "The voice"): in each language of the
/// cycle, the flag's sentence, the zone, and in an evacuation the way out (the exit, its distance
/// and direction, or the stewards). Every word comes from the catalogues' `say_*` lines. An
/// evacuation is announced after a two-tone alarm, and again every `kiosk.speak_repeat` while it
/// lasts.
package struct KioskAnnouncement: Hashable, Sendable {
    /// One language's sentences.
    package struct Spoken: Hashable, Sendable {
        package var language: String
        package var text: String
    }

    package var flag: KioskView.Flag
    /// The alarm before the words: evacuations only.
    package var alarm: Bool { flag == .evacuation }
    /// In the order of the cycle.
    package var spoken: [Spoken]

    /// The announcement of `link` now, in `catalogues`' words; `exit` is this kiosk's exit.
    package init(link: KioskView.Link, catalogues: [KioskCatalogue], exit: KioskExit) {
        var state: StateMessage?
        if case .connected(let connected) = link { state = connected }
        let flag = state.flatMap { KioskView.Flag(mode: $0.mode) } ?? .noSignal
        self.flag = flag
        spoken = catalogues.map { catalogue in
            Spoken(
                language: catalogue.language, text: Self.sentences(flag, state, catalogue, exit).joined(separator: " "))
        }
    }

    private static func sentences(
        _ flag: KioskView.Flag, _ state: StateMessage?, _ catalogue: KioskCatalogue, _ exit: KioskExit
    ) -> [String] {
        var sentences = [catalogue.text(phrase(flag))]
        guard flag != .noSignal, let state else { return sentences }
        if let zone = state.zone {
            let name = state.zoneName.map { KioskText.stripped($0, limit: KioskView.detailLimit) } ?? ""
            sentences.append(
                name.isEmpty
                    ? catalogue.text(.sayZone, ["zone": String(zone)]) + "."
                    : catalogue.text(.sayZoneNamed, ["zone": String(zone), "name": name]) + ".")
        }
        guard flag == .evacuation else { return sentences }
        if exit.isEmpty {
            sentences.append(catalogue.text(.sayFollowStewards) + ".")
            return sentences
        }
        if let name = exit.name.map({ KioskText.stripped($0, limit: KioskExit.maxNameLength) }), !name.isEmpty {
            if let distance = exit.distanceMetres {
                sentences.append(catalogue.text(.sayExitDistance, ["name": name, "distance": String(distance)]))
            } else {
                sentences.append(catalogue.text(.sayExit, ["name": name]))
            }
        }
        if let direction = exit.direction { sentences.append(catalogue.text(phrase(direction))) }
        return sentences
    }

    /// The flag's sentence.
    static func phrase(_ flag: KioskView.Flag) -> KioskPhrase {
        switch flag {
        case .green: .sayGreen
        case .yellow: .sayYellow
        case .vsc: .sayVsc
        case .safetyCar: .saySafetyCar
        case .red: .sayRed
        case .evacuation: .sayEvacuation
        case .noSignal: .sayNoSignal
        }
    }

    /// Where the exit is, as a sentence.
    static func phrase(_ direction: BlockArrow.Direction) -> KioskPhrase {
        switch direction {
        case .up: .sayUp
        case .upRight: .sayUpRight
        case .right: .sayRight
        case .downRight: .sayDownRight
        case .down: .sayDown
        case .downLeft: .sayDownLeft
        case .left: .sayLeft
        case .upLeft: .sayUpLeft
        }
    }
}
