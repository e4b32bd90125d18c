import BeacondTestSupport
import Foundation
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// Issue 31, part 1: the catalogues (languages/*.yaml), how they load, and the words they give.
@Suite struct KioskCatalogueTests {
    static let shipped = RepositoryPaths.root.appendingPathComponent("languages").path
    static let codes = ["es", "ca", "en", "fr", "de", "it", "pt"]

    static func loaded() -> [KioskCatalogue] {
        KioskCatalogueFiles.load(languages: codes, directories: [shipped]).catalogues
    }

    @Test func theShippedCataloguesLoadWithoutAProblemAndTranslateEveryPhrase() {
        let loaded = KioskCatalogueFiles.load(languages: Self.codes, directories: [Self.shipped])
        #expect(loaded.problems == [])
        #expect(loaded.catalogues.map(\.language) == Self.codes)
        for catalogue in loaded.catalogues {
            #expect(catalogue.translated == Set(KioskPhrase.allCases), "\(catalogue.language)")
            #expect(catalogue.name != catalogue.language, "\(catalogue.language) names itself")
        }
        // The shipped folder holds exactly these languages.
        let files = (try? FileManager.default.contentsOfDirectory(atPath: Self.shipped)) ?? []
        #expect(Set(files) == Set(Self.codes.map { $0 + ".yaml" }))
    }

    /// The built-in English (shown for any key a language lacks) is languages/en.yaml, word for word.
    @Test func englishOnDiskIsTheBuiltInEnglish() throws {
        let english = try #require(Self.loaded().first { $0.language == "en" })
        for phrase in KioskPhrase.allCases {
            #expect(english.template(phrase) == phrase.english, "\(phrase.rawValue)")
        }
    }

    /// The words a circuit uses (the issue's examples).
    @Test func theSpanishAndCatalanWordsAreACircuits() throws {
        let catalogues = Self.loaded()
        let spanish = try #require(catalogues.first { $0.language == "es" })
        #expect(spanish.text(.red) == "BANDERA ROJA")
        #expect(spanish.text(.safetyCar) == "COCHE DE SEGURIDAD")
        #expect(spanish.text(.evacuation) == "EVACUACIÓN")
        let catalan = try #require(catalogues.first { $0.language == "ca" })
        #expect(catalan.text(.red) == "BANDERA VERMELLA")
        #expect(catalan.text(.evacuation) == "EVACUACIÓ")
    }

    /// Issue 31: the block font covers every letter of every headline, in every catalogue.
    @Test func everyHeadlineOfEveryCatalogueHasBlockLetters() {
        for catalogue in Self.loaded() {
            for flag in KioskView.Flag.allCases {
                let headline = catalogue.text(flag.phrase)
                #expect(BlockFont.canDraw(headline), "\(catalogue.language): \(headline)")
            }
            #expect(BlockFont.canDraw(catalogue.text(.stale)), "\(catalogue.language)")
        }
    }

    @Test func aVenueFileReplacesOnlyTheKeysItHasAndCanAddALanguage() throws {
        let venue = try TemporaryDirectory(prefix: "kiosk-languages")
        try venue.write("es.yaml", "language: es\nred: \"ROJA\"\n")
        try venue.write("eu.yaml", "language: eu\nname: Euskara\nred: BANDERA GORRIA\n")
        let loaded = KioskCatalogueFiles.load(languages: ["es", "eu"], directories: [Self.shipped, venue.path])
        #expect(loaded.problems == [])
        #expect(loaded.catalogues[0].text(.red) == "ROJA")
        #expect(loaded.catalogues[0].text(.yellow) == "BANDERA AMARILLA")
        #expect(loaded.catalogues[1].language == "eu" && loaded.catalogues[1].name == "Euskara")
        #expect(loaded.catalogues[1].text(.red) == "BANDERA GORRIA")
        #expect(loaded.catalogues[1].text(.yellow) == "YELLOW", "a key the venue's language lacks is English")
    }

    /// Bad keys cost only themselves, named by file and line; a language with no file leaves the
    /// cycle; with none left the kiosk shows the built-in English.
    @Test func problemsNameTheFileAndLineAndCostOnlyWhatTheyTouch() throws {
        let venue = try TemporaryDirectory(prefix: "kiosk-languages")
        let path = try venue.write(
            "es.yaml",
            """
            language: ca
            verde: VERDE
            zone: "Zona"
            yellow: ""
            red: "ROJA {zone}"
            green: "VER\u{200B}DE\u{200F}"
            no_signal: [SIN, SEÑAL]

            """)
        let loaded = KioskCatalogueFiles.load(languages: ["es", "xx"], directories: [Self.shipped, venue.path])
        #expect(
            loaded.problems == [
                "\(path):1: says language \"ca\", but is es.yaml",
                "\(path):2: unknown key \"verde\": skipped",
                "\(path):3: zone must hold {zone}, each once: shown in English",
                "\(path):4: yellow is empty: shown in English",
                "\(path):5: red must hold no {placeholder}: shown in English",
                "\(path):7: expected `key: text` on one line: skipped",
                "no usable catalogue for language \"xx\" (looked for xx.yaml in \(Self.shipped) and \(venue.path)): "
                    + "it is left out of the cycle",
            ])
        let spanish = try #require(loaded.catalogues.first)
        #expect(loaded.catalogues.count == 1)
        #expect(spanish.text(.zone, ["zone": "3"]) == "Zona 3", "the shipped text stays")
        #expect(spanish.text(.red) == "BANDERA ROJA")
        #expect(spanish.text(.green) == "VERDE", "invisible characters are stripped")

        let none = KioskCatalogueFiles.load(languages: ["xx"], directories: [venue.path])
        #expect(none.catalogues == [.english])
        #expect(none.problems.last == "no language left to show: showing the built-in English")
    }

    @Test func unusableFilesAreReportedAndSkipped() throws {
        let venue = try TemporaryDirectory(prefix: "kiosk-languages")
        let large = try venue.write("de.yaml", "red: " + String(repeating: "x", count: 70 * 1024) + "\n")
        let binary = venue.path + "/fr.yaml"
        try Data([0x72, 0x65, 0x64, 0x3A, 0x20, 0xFF, 0x0A]).write(to: URL(fileURLWithPath: binary))
        let alias = try venue.write("it.yaml", "red: &a ROSSA\nyellow: *a\n")
        try FileManager.default.createDirectory(atPath: venue.path + "/pt.yaml", withIntermediateDirectories: false)
        let loaded = KioskCatalogueFiles.load(languages: ["de", "fr", "it", "pt"], directories: [venue.path])
        let problems = loaded.problems.filter { !$0.hasPrefix("no usable catalogue for language") }
        #expect(problems.count == 5, "\(loaded.problems)")
        #expect(problems[0] == "\(large): is larger than 64 KiB: not used")
        #expect(problems[1].hasPrefix("\(binary):1:6: is not valid UTF-8: byte 0xFF at offset 5"))
        #expect(problems[2].hasPrefix("\(alias):1:"))
        #expect(problems[3].hasPrefix("\(venue.path)/pt.yaml: is a directory"), "\(problems[3])")
        #expect(problems[4] == "no language left to show: showing the built-in English")
        #expect(loaded.catalogues == [.english], "an unusable file leaves its language out of the cycle")
        // Beside a usable shipped file, an unusable venue file costs nothing but its own words.
        let shipped = KioskCatalogueFiles.load(languages: ["de"], directories: [Self.shipped, venue.path])
        #expect(shipped.catalogues.map { $0.text(.red) } == ["ROTE FLAGGE"])
        #expect(shipped.problems == ["\(large): is larger than 64 KiB: not used"])
    }

    @Test func placeholdersAreFilledAndValuesAreNeverReadForPlaceholders() {
        let english = KioskCatalogue.english
        #expect(english.text(.zoneNamed, ["zone": "3", "name": "{zone} Tribuna"]) == "Zone 3 — {zone} Tribuna")
        #expect(english.text(.exitDistance, ["name": "Gate 3"]) == "Exit: Gate 3 — {distance} m")
        #expect(KioskCatalogue.placeholders(in: "a {b} {c_1} {} {d e} {") == ["b", "c_1"])
    }

    @Test(arguments: [
        ("es", true), ("ca", true), ("pt-BR", true), ("sr-Latn", true), ("ast", true), ("", false), ("ES", false),
        ("e", false), ("../x", false), ("es/../../etc", false), ("español", false), ("es-", false),
        ("abcd", false), ("es-abcdefghi", false),
    ])
    func languageCodes(code: String, valid: Bool) {
        #expect(KioskCatalogue.isLanguageCode(code) == valid)
    }
}

@Suite struct KioskLanguageCycleTests {
    /// Each language for its period, in order, round and round; a change of flag starts again at
    /// the first; the next change is when the period ends.
    @Test func eachLanguageForItsPeriodAndTheFirstAfterAChangeOfFlag() {
        var cycle = KioskLanguageCycle(count: 3, period: 4_000_000)
        #expect(cycle.index(flag: .green, now: 10_000_000) == 0)
        #expect(cycle.nextChange(after: 10_000_000) == 14_000_000)
        #expect(cycle.index(flag: .green, now: 13_999_999) == 0)
        #expect(cycle.index(flag: .green, now: 14_000_000) == 1)
        #expect(cycle.index(flag: .green, now: 18_000_000) == 2)
        #expect(cycle.index(flag: .green, now: 22_000_000) == 0)
        #expect(cycle.index(flag: .red, now: 23_000_000) == 0, "a new flag is shown first in the first language")
        #expect(cycle.nextChange(after: 23_000_000) == 27_000_000)
        #expect(cycle.index(flag: .red, now: 27_000_001) == 1)
        var one = KioskLanguageCycle(count: 1, period: 4_000_000)
        #expect(one.index(flag: .green, now: 99_000_000) == 0 && one.nextChange(after: 0) == nil)
    }
}

@Suite struct KioskConfigTests {
    /// One file for a kiosk's daemon and its screen: each program checks its own keys and names the
    /// other's only (a kiosk may not even read the daemon's CA file).
    @Test func eachProgramReadsItsOwnKeysAndAcceptsTheOthersByName() throws {
        let scratch = ConfigScratch()
        let path = scratch.write(
            "beacond.yaml",
            """
            remote:
              ca_file: /nonexistent/ca.pem
            kiosk:
              languages: [es, en]
              language_period: 2.5
              exit:
                direction: down_left
                name: Puerta 3 / Gate 3
                distance_m: 120

            """)
        let settings = try KioskSettings.load(path: path)
        #expect(settings.languages == ["es", "en"])
        #expect(settings.languagePeriod == 2_500_000)
        #expect(settings.exit == KioskExit(direction: .downLeft, name: "Puerta 3 / Gate 3", distanceMetres: 120))
        #expect(throws: ConfigurationError.self) { try DaemonConfiguration.load(path: path) }

        let daemonFile = scratch.write("daemon.yaml", "fusion:\n  policy: safety\nkiosk:\n  languages: [\"ES!\"]\n")
        #expect(try DaemonConfiguration.load(path: daemonFile).kiosk == KioskSettings())
        #expect(throws: ConfigurationError.self) { try KioskSettings.load(path: daemonFile) }
    }

    @Test(arguments: [
        ("kiosk:\n  languages: []\n", "kiosk.languages: name at least one language, like [es, en]"),
        (
            "kiosk:\n  languages: [es, ca, en, fr, de, it, pt, eu, gl]\n",
            "kiosk.languages: 9 languages; at most 8 are cycled through"
        ),
        ("kiosk:\n  languages: [es, es]\n", "kiosk.languages: entry 2: \"es\" is listed twice"),
        (
            "kiosk:\n  languages: [es, ../x]\n",
            "kiosk.languages: entry 2: \"../x\" is not a language code like es, ca, en or pt-BR"
        ),
        ("kiosk:\n  language_period: 0.5\n", "kiosk.language_period: must be between 1 and 60 seconds"),
        (
            "kiosk:\n  exit:\n    direction: north\n",
            "kiosk.exit.direction: expected one of up, up_right, right, down_right, down, down_left, left, "
                + "up_left, found \"north\""
        ),
        ("kiosk:\n  exit:\n    distance_m: -1\n", "kiosk.exit.distance_m: must be between 0 and 100000"),
        ("kiosk:\n  exit:\n    colour: red\n", "kiosk.exit.colour: unknown key"),
        ("kiosk:\n  exit: Gate 3\n", "kiosk.exit: expected a mapping of keys"),
    ])
    func kioskKeyProblemsNameTheKeyAndLine(yaml: String, reason: String) throws {
        let scratch = ConfigScratch()
        let path = scratch.write("kiosk.yaml", yaml)
        do {
            _ = try KioskSettings.load(path: path)
            Issue.record("\(yaml) loaded")
        } catch {
            let text = error.description
            #expect(text.contains(reason), "\(text)")
            #expect(text.hasPrefix(path + ":"), "\(text)")
        }
    }
}
