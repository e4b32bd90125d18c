import Foundation
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// Issue 31, part 2: the evacuation view (arrow, exit, route, stewards) and the temperature line,
/// in the view both kiosks share, the terminal's frame and the web page's document.
@Suite struct KioskEvacuationViewTests {
    static let gate = KioskExit(direction: .upRight, name: "Puerta 3 / Gate 3", distanceMetres: 120)

    static func catalogue(_ code: String) throws -> KioskCatalogue {
        try #require(KioskCatalogueTests.loaded().first { $0.language == code })
    }

    static func evacuation(route: String? = nil, message: String? = nil) -> StateMessage {
        var remote = KioskSamples.remote(message: message)
        remote.mode = "evacuation"
        remote.evacuationRoute = route
        return KioskSamples.state(mode: "evacuation", source: "remote", zone: nil, remote: remote)
    }

    @Test func anEvacuationShowsTheExitItsDistanceTheRouteAndTheArrowInTheLanguageShown() throws {
        let spanish = try Self.catalogue("es")
        let state = Self.evacuation(route: "Por la recta\u{1B}[2J principal", message: "EVACUACIÓN - Siga las Flechas")
        let view = KioskView(link: .connected(state), now: KioskSamples.now, catalogue: spanish, exit: Self.gate)
        #expect(view.headline == "EVACUACIÓN" && view.language == "es")
        #expect(view.arrow == .upRight)
        #expect(view.guidance == ["Salida: Puerta 3 / Gate 3 — 120 m", "Ruta: Por la recta[2J principal"])
        #expect(view.details.contains { $0.hasSuffix("EVACUACIÓN - Siga las Flechas") })
        let english = KioskView(link: .connected(state), now: KioskSamples.now, exit: Self.gate)
        #expect(english.guidance == ["Exit: Puerta 3 / Gate 3 — 120 m", "Route: Por la recta[2J principal"])
    }

    /// Without a configured exit: follow the stewards, and never an arrow nobody configured.
    @Test func withoutAnExitTheScreenSaysToFollowTheStewardsAndDrawsNoArrow() throws {
        for code in KioskCatalogueTests.codes {
            let catalogue = try Self.catalogue(code)
            let view = KioskView(link: .connected(Self.evacuation()), now: KioskSamples.now, catalogue: catalogue)
            #expect(view.arrow == nil)
            #expect(view.guidance == [catalogue.text(.followStewards)], "\(code)")
            let frame = KioskFrame.lines(view, columns: 200, rows: 60)
            let words = KioskFrame.textColumn(view, columns: 200, body: 59)
            #expect(frame == words + [KioskCells.centred(view.status, columns: 200)], "\(code): no arrow column")
        }
        // A direction alone: the arrow, no exit line, no stewards line.
        let arrowOnly = KioskView(
            link: .connected(Self.evacuation()), now: KioskSamples.now, exit: KioskExit(direction: .left))
        #expect(arrowOnly.arrow == .left && arrowOnly.guidance == [])
    }

    @Test func onlyAnEvacuationShowsTheExit() {
        for mode in ["normal", "red_flag", "unknown"] {
            let view = KioskView(
                link: .connected(KioskSamples.state(mode: mode)), now: KioskSamples.now, exit: Self.gate)
            #expect(view.arrow == nil && view.guidance == [], "\(mode)")
        }
        let lost = KioskView(link: .unreachable(since: 0, reason: "gone"), now: KioskSamples.now, exit: Self.gate)
        #expect(lost.arrow == nil && lost.guidance == [])
    }

    /// The terminal: the block arrow on the left, as large as fits, the words beside it; too small
    /// a screen gets the arrow's character at the start of the guidance.
    @Test func theTerminalDrawsTheArrowBesideTheWords() throws {
        let view = KioskView(link: .connected(Self.evacuation()), now: KioskSamples.now, exit: Self.gate)
        for (columns, rows) in [(80, 24), (200, 60), (132, 43)] {
            let frame = KioskFrame.lines(view, columns: columns, rows: rows)
            #expect(frame.count == rows)
            #expect(frame.allSatisfy { KioskCells.width(of: $0) == columns }, "\(columns)x\(rows)")
            let arrow = try #require(Self.arrow(.upRight, in: frame), "\(columns)x\(rows): no block arrow")
            #expect(arrow.height * 2 >= rows - 1, "\(columns)x\(rows): the arrow fills most of the height")
            #expect(
                frame.contains { $0.contains(BlockFont.rows("EVACUATE", xScale: 1, yScale: 1)![0]) }
                    || frame.contains { $0.contains(BlockFont.rows("EVACUATE", xScale: 2, yScale: 2)![0]) }
                    || frame.contains { $0.contains(BlockFont.rows("EVACUATE", xScale: 4, yScale: 4)![0]) },
                "\(columns)x\(rows): the headline in block letters")
            #expect(frame.last?.trimmingCharacters(in: .whitespaces) == "EVACUATE")
            #expect(frame.contains { $0.contains("Exit: Puerta 3 / Gate 3 — 120 m") })
        }
        // Too long a headline for block letters beside the arrow: across the top, the arrow below.
        let spanish = KioskView(
            link: .connected(Self.evacuation()), now: KioskSamples.now, catalogue: try Self.catalogue("es"),
            exit: Self.gate)
        let stacked = KioskFrame.lines(spanish, columns: 80, rows: 24)
        let letters = try #require(BlockFont.rows("EVACUACIÓN", xScale: 1, yScale: 1))
        #expect(stacked[0].contains(letters[0]), "\(stacked)")
        let below = try #require(Self.arrow(.upRight, in: stacked))
        #expect(below.top > BlockFont.height && below.height == BlockArrow.size)
        #expect(stacked.contains { $0.contains("Salida: Puerta 3 / Gate 3 — 120 m") })
        let small = KioskFrame.lines(view, columns: 40, rows: 12)
        #expect(small.contains { $0.contains("↗ Exit: Puerta 3 / Gate 3") }, "\(small)")
        #expect(!small.joined().contains("██████████████"))
    }

    /// The block arrow for `direction` drawn at column 3 of consecutive rows of `frame`, at any
    /// scale: its height; nil when there is none.
    static func arrow(_ direction: BlockArrow.Direction, in frame: [String]) -> (height: Int, top: Int)? {
        for yScale in stride(from: 6, through: 1, by: -1) {
            for xScale in yScale...(2 * yScale) {
                let block = BlockArrow.rows(direction, xScale: xScale, yScale: yScale).map { "  " + $0 + "  " }
                guard block.count <= frame.count else { continue }
                for top in 0...(frame.count - block.count)
                where zip(block, frame[top...]).allSatisfy({ $1.hasPrefix($0) }) {
                    return (block.count, top)
                }
            }
        }
        return nil
    }

    @Test(arguments: BlockArrow.Direction.allCases)
    func eachArrowPointsItsWay(direction: BlockArrow.Direction) throws {
        let rows = BlockArrow.rows(direction, xScale: 1, yScale: 1)
        #expect(rows.count == BlockArrow.size && rows.allSatisfy { $0.count == BlockArrow.size })
        // The tip is the lit pixel farthest in the arrow's direction.
        let (dx, dy): (Int, Int) = {
            let radians = Double(direction.degrees) * .pi / 180
            return (Int((sin(radians) * 2).rounded()), Int((-cos(radians) * 2).rounded()))
        }()
        var best: (score: Int, x: Int, y: Int)?
        for (y, row) in rows.enumerated() {
            for (x, cell) in row.enumerated() where cell == "█" {
                let score = x * dx + y * dy
                if best == nil || score > best!.score { best = (score, x, y) }
            }
        }
        let tip = try #require(best)
        let centre = BlockArrow.size / 2
        if dx != 0 { #expect((tip.x - centre).signum() == dx.signum(), "\(direction): tip at \(tip)") }
        if dy != 0 { #expect((tip.y - centre).signum() == dy.signum(), "\(direction): tip at \(tip)") }
        #expect(BlockArrow.rows(direction, xScale: 0, yScale: 1) == [])
    }

    /// A headline too wide for one line of block letters goes on two, split at a space.
    @Test func aLongHeadlineIsDrawnOnTwoLinesOfBlockLetters() throws {
        let spanish = try Self.catalogue("es")
        let view = KioskView(
            link: .connected(KioskSamples.state(mode: "safety_car")), now: KioskSamples.now, catalogue: spanish)
        let rows = try #require(KioskFrame.blockHeadline(view.headline, columns: 80, body: 23, detailCount: 3))
        let lines = rows.split { !$0.contains("█") }
        #expect(lines.count == 2)
        #expect(rows.count == 2 * BlockFont.height + 1)
        #expect(rows.first == BlockFont.rows("COCHE DE", xScale: 1, yScale: 1)?.first)
        // Every flag of every catalogue is drawn in block letters on an 80×24 terminal.
        for catalogue in KioskCatalogueTests.loaded() {
            for flag in KioskView.Flag.allCases {
                let headline = catalogue.text(flag.phrase)
                #expect(
                    KioskFrame.blockHeadline(headline, columns: 80, body: 23, detailCount: 3) != nil,
                    "\(catalogue.language): \(headline)")
            }
        }
    }

    /// The beacon's v1 temperature for a beacon's state, else race control's, whole degrees.
    @Test func theTemperatureComesFromTheBeaconElseRaceControl() {
        func lines(_ state: StateMessage) -> [String] {
            KioskView(link: .connected(state), now: KioskSamples.now).details.filter { $0.hasPrefix("Temperature") }
        }
        var state = KioskSamples.state(mode: "normal")
        state.beacon = BeaconReport(
            key: "zone 2", kind: "circuit", zone: 2, sourceID: nil, address: "C0:FF:EE:00:00:02", mode: "normal",
            rssi: -60, distance: nil, sequence: 1, ttl: 10, active: true, held: false, contested: false, ttlLeft: 9,
            lastSeen: 0.1, temperature: 12, rejected: nil)
        var remote = KioskSamples.remote()
        remote.temperature = 20.6
        state.remote = remote
        #expect(lines(state) == ["Temperature 12 °C"])
        state.beacon?.temperature = nil
        #expect(lines(state) == ["Temperature 21 °C"], "a beacon without one: race control's")
        state.source = "remote"
        #expect(lines(state) == ["Temperature 21 °C"])
        for odd in [Double.nan, .infinity, 5000] {
            state.remote?.temperature = odd
            #expect(lines(state) == [], "\(odd)")
        }
        state.remote?.temperature = nil
        #expect(lines(state) == [])
    }

    /// The web page's document: every language's words, the arrow and the period; the page names
    /// the language shown.
    @Test func theWebDocumentCarriesEveryLanguageAndThePageSetsLang() throws {
        let catalogues = try ["es", "en"].map(Self.catalogue)
        let views = catalogues.map { catalogue in
            KioskView(link: .connected(Self.evacuation()), now: KioskSamples.now, catalogue: catalogue, exit: Self.gate)
        }
        let document = WebKioskViewDocument(views, period: 6_000_000)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(document.json().utf8)) as? [String: Any])
        #expect(object["headline"] as? String == "EVACUACIÓN")
        #expect(object["arrow"] as? String == "up_right" && object["arrow_deg"] as? Int == 45)
        #expect(object["period_ms"] as? Int == 6000)
        let languages = try #require(object["languages"] as? [[String: Any]])
        #expect(languages.map { $0["lang"] as? String } == ["es", "en"])
        #expect(languages[1]["guidance"] as? [String] == ["Exit: Puerta 3 / Gate 3 — 120 m"])
        let page = String(decoding: WebKioskPage.html(view: document, steady: false), as: UTF8.self)
        #expect(page.contains("<html lang=\"es\">") && page.contains("<main id=\"flag\" lang=\"es\">"))
        #expect(page.contains("<div id=\"arrow\"><svg"))
        #expect(page.contains("<ul id=\"guidance\"><li>Salida: Puerta 3 / Gate 3 — 120 m</li></ul>"))
        let calm = WebKioskViewDocument(
            [KioskView(link: .connected(KioskSamples.state(mode: "normal")), now: 0)], period: 1)
        #expect(
            String(decoding: WebKioskPage.html(view: calm, steady: false), as: UTF8.self).contains(
                "<div id=\"arrow\" hidden>"))
    }

    /// What the page says aloud (`?speak=1`) is the terminal's voice's announcement, word for word,
    /// in each language; an evacuation carries the alarm and the repeat interval.
    @Test func theWebDocumentCarriesTheAnnouncementOfEachLanguage() throws {
        let catalogues = try ["es", "en"].map(Self.catalogue)
        let presentation = KioskPresentation(catalogues: catalogues, exit: Self.gate, speakRepeat: 7_000_000)
        let link = KioskView.Link.connected(Self.evacuation())
        let document = WebKioskViewDocument(link: link, now: KioskSamples.now, presentation: presentation)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(document.json().utf8)) as? [String: Any])
        #expect(object["alarm"] as? Bool == true && object["speak_repeat_ms"] as? Int == 7000)
        let announcement = KioskAnnouncement(link: link, catalogues: catalogues, exit: Self.gate)
        let languages = try #require(object["languages"] as? [[String: Any]])
        #expect(languages.map { $0["say"] as? String } == announcement.spoken.map(\.text))
        #expect((languages[0]["say"] as? String)?.contains("Puerta 3 / Gate 3") == true)
        let calm = WebKioskViewDocument(
            link: .connected(KioskSamples.state(mode: "normal", zone: nil)), now: 0, presentation: presentation)
        #expect(
            calm.alarm == false
                && calm.languages.map(\.say) == ["Bandera verde. Pista libre.", "Green flag. Track clear."])
        // Lost, the page says NO SIGNAL in each language.
        #expect(WebKioskPage.lostView(presentation).languages.map(\.say).allSatisfy { !$0.isEmpty })
    }
}
