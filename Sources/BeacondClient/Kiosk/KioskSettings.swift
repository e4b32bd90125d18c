/// The `kiosk.*` keys of the config file (docs/configuration.md): what `beacond kiosk --config`
/// reads, and what the daemon accepts and ignores, so one file serves a kiosk's daemon and screen.
package struct KioskSettings: Hashable, Sendable {
    /// The languages the screen cycles through, in order (`kiosk.languages`); the first is shown
    /// first after a change of flag.
    package var languages: [String] = ["en"]
    /// How long each language stays on screen, microseconds (`kiosk.language_period`).
    package var languagePeriod: Int64 = 4_000_000
    /// A venue's catalogues (`kiosk.language_dir`): a file there adds a language, or replaces the
    /// keys it has of the shipped one.
    package var languageDir: String = "/etc/beacond/languages"
    /// The exit this kiosk points to in an evacuation (`kiosk.exit.*`): none unless configured.
    package var exit = KioskExit()
    /// Announce every change of flag aloud (`kiosk.speak`, `--speak`).
    package var speak = false
    /// Microseconds between an evacuation's announcements (`kiosk.speak_repeat`).
    package var speakRepeat: Int64 = 20_000_000
    /// The ALSA device the voice plays on (`kiosk.audio_device`); nil: aplay's default.
    package var audioDevice: String?

    package init() {}

    /// At most this many languages in the cycle: eight at 4 s is a 32 s cycle already.
    package static let maxLanguages = 8
}

/// The exit a kiosk, bolted to one spot, sends people to in an evacuation.
package struct KioskExit: Hashable, Sendable {
    /// Where the arrow points (`kiosk.exit.direction`); nil: no arrow is drawn.
    package var direction: BlockArrow.Direction?
    /// The exit's name as the venue signs it ("Puerta 3 / Gate 3"), shown as it is in every language.
    package var name: String?
    /// How far the exit is, metres.
    package var distanceMetres: Int?

    package init(direction: BlockArrow.Direction? = nil, name: String? = nil, distanceMetres: Int? = nil) {
        self.direction = direction
        self.name = name
        self.distanceMetres = distanceMetres
    }

    /// Nothing configured: the screen tells people to follow the stewards.
    package var isEmpty: Bool { direction == nil && name == nil }

    /// The longest exit name kept, in characters.
    package static let maxNameLength = 80
    /// The farthest exit, metres.
    package static let maxDistanceMetres = 100_000
}

extension BlockArrow.Direction {
    /// The arrow as one character, for a screen too small for the block arrow and for the web
    /// page's text alternative.
    package var character: String {
        switch self {
        case .up: "↑"
        case .upRight: "↗"
        case .right: "→"
        case .downRight: "↘"
        case .down: "↓"
        case .downLeft: "↙"
        case .left: "←"
        case .upLeft: "↖"
        }
    }

    /// The direction's angle, degrees clockwise from up: how the web page turns its arrow.
    package var degrees: Int {
        switch self {
        case .up: 0
        case .upRight: 45
        case .right: 90
        case .downRight: 135
        case .down: 180
        case .downLeft: 225
        case .left: 270
        case .upLeft: 315
        }
    }
}
