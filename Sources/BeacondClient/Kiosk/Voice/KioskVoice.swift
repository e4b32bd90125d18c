import Synchronization

/// Decides when the kiosk speaks (docs/kiosk.md, "The voice"): at every change of flag, and
/// during an evacuation whenever its words change (a new zone, a new exit), so the repeats say
/// the current words. The NO SIGNAL the kiosk starts with is not announced: the first thing said
/// is the daemon's first flag. Fed from the kiosk's feed (any thread).
package final class KioskVoice: Sendable {
    private let speaker: KioskSpeaker
    private let presentation: KioskPresentation
    private let last = Mutex<KioskAnnouncement?>(nil)
    /// Told of each announcement handed to the speaker (for tests).
    private let announced: @Sendable (KioskAnnouncement) -> Void

    package init(
        speaker: KioskSpeaker, presentation: KioskPresentation,
        announced: @escaping @Sendable (KioskAnnouncement) -> Void = { _ in }
    ) {
        self.speaker = speaker
        self.presentation = presentation
        self.announced = announced
    }

    /// Follows the kiosk's link to the daemon.
    package func follow(_ link: KioskView.Link) {
        let announcement = KioskAnnouncement(link: link, catalogues: presentation.catalogues, exit: presentation.exit)
        let speak = last.withLock { last -> Bool in
            let previous =
                last ?? KioskAnnouncement(link: .unreachable(since: 0, reason: ""), catalogues: [], exit: .init())
            let changed = announcement.flag != previous.flag || (announcement.alarm && announcement != previous)
            if changed { last = announcement }
            return changed
        }
        guard speak else { return }
        announced(announcement)
        speaker.announce(announcement)
    }

    package func stop() { speaker.stop() }
}
