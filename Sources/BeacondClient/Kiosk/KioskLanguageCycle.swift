/// How a kiosk shows its words: the languages it cycles through, each for `period`, the exit
/// it points to in an evacuation (docs/kiosk.md, "Languages"), and how often an evacuation is
/// said again.
package struct KioskPresentation: Sendable {
    /// Never empty: the first is shown first after a change of flag.
    package var catalogues: [KioskCatalogue]
    /// Microseconds each language stays on screen.
    package var period: Int64
    package var exit: KioskExit
    /// Microseconds between an evacuation's announcements (`kiosk.speak_repeat`).
    package var speakRepeat: Int64

    package init(
        catalogues: [KioskCatalogue] = [.english], period: Int64 = 4_000_000, exit: KioskExit = KioskExit(),
        speakRepeat: Int64 = KioskSettings().speakRepeat
    ) {
        self.catalogues = catalogues.isEmpty ? [.english] : catalogues
        self.period = max(1, period)
        self.exit = exit
        self.speakRepeat = max(1_000_000, speakRepeat)
    }
}

/// Which language is on screen: the cycle restarts at the first language whenever the flag
/// changes, so a new flag is read first in the venue's first language, and every language is seen
/// within one cycle. Times are monotonic microseconds.
package struct KioskLanguageCycle: Sendable {
    package let count: Int
    package let period: Int64
    private var flag: KioskView.Flag?
    private var since: Int64 = 0

    package init(count: Int, period: Int64) {
        self.count = max(1, count)
        self.period = max(1, period)
    }

    /// The index of the language to show at `now` for `flag`.
    package mutating func index(flag: KioskView.Flag, now: Int64) -> Int {
        if flag != self.flag {
            self.flag = flag
            since = now
        }
        guard count > 1 else { return 0 }
        return Int((max(0, now - since) / period) % Int64(count))
    }

    /// When the language next changes (monotonic microseconds); nil with one language.
    package func nextChange(after now: Int64) -> Int64? {
        guard count > 1 else { return nil }
        let elapsed = max(0, now - since)
        return since + (elapsed / period + 1) * period
    }
}
