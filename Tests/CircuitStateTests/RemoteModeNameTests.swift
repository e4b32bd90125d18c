import CircuitState
import Testing

/// How race control's mode names are read (`RemoteModeName`, docs/fusion.md "How a name is read").
@Suite struct RemoteModeNameTests {
    @Test func theSkeletonDropsInvisiblesFoldsCaseAndJoinsWords() {
        #expect(RemoteModeName.skeleton("  evacuation\n") == "EVACUATION")
        #expect(RemoteModeName.skeleton("\u{FEFF}Safety Car\u{200E}") == "SAFETY_CAR")
        #expect(RemoteModeName.skeleton("red - flag") == "RED_FLAG")
        #expect(RemoteModeName.skeleton("\u{00A0}green.flag\u{3000}") == "GREEN_FLAG")
        #expect(RemoteModeName.skeleton("EVA\u{200B}CU\u{00AD}A\u{2060}TI\u{061C}ON") == "EVACUATION")
        #expect(RemoteModeName.skeleton("E\u{0301}VACUATION") == "EVACUATION")
        #expect(RemoteModeName.skeleton("") == "")
        #expect(RemoteModeName.skeleton(" \u{200B}\t") == "")
    }

    /// Each look-alike class: Cyrillic, Greek, fullwidth, mathematical, accented, symbols.
    @Test(arguments: [
        ("\u{0415}VACUATION", "Cyrillic capital IE"), ("EV\u{0410}CU\u{0410}TI\u{041E}N", "Cyrillic A and O"),
        ("\u{0435}vacuation", "Cyrillic small ie"), ("EV\u{0391}CU\u{0391}TI\u{039F}N", "Greek capitals"),
        ("\u{FF25}\u{FF36}\u{FF21}\u{FF23}\u{FF35}\u{FF21}\u{FF34}\u{FF29}\u{FF2F}\u{FF2E}", "fullwidth"),
        ("\u{1D404}VACUATION", "mathematical bold E"), ("\u{00C9}VACUATION", "Latin E with acute"),
        ("EVACUAT\u{0130}ON", "Latin I with dot above"), ("evacuat\u{0131}on", "dotless i"),
        ("EVACUAT\u{2160}ON", "Roman numeral one"), ("\u{1D5A4}\u{1D5B5}ACUATION", "sans-serif"),
    ])
    func lookAlikeLettersReadAsLatin(name: String, what: String) {
        #expect(RemoteModeName.skeleton(name) == "EVACUATION", "\(what)")
        #expect(TrackMode(remoteName: name) == .evacuation, "\(what)")
    }

    /// GeoRacing's own names (docs/fusion.md lists where each comes from).
    @Test(arguments: [
        ("GREEN_FLAG", TrackMode.normal), ("CAUTION", .yellowFlag), ("VSC_DEPLOYED", .vsc),
        ("virtual safety car", .vsc), ("SC_DEPLOYED", .safetyCar), ("EVACUATE", .evacuation),
        ("EVACUATION_MODE", .evacuation), ("EVACUATION_REQUIRED", .evacuation), ("evacuación", .evacuation),
        ("Evacuation in progress", .evacuation),
    ])
    func georacingSynonyms(name: String, mode: TrackMode) {
        #expect(TrackMode(remoteName: name) == mode)
    }

    /// Every listed synonym reads as its mode, and only evacuation is matched by containment.
    @Test func everySynonymReadsAsItsModeAndOnlyEvacuationByContainment() {
        for (skeleton, mode) in RemoteModeName.synonyms {
            #expect(TrackMode(remoteName: skeleton.lowercased()) == mode, "\(skeleton)")
            #expect(RemoteModeName.skeleton(skeleton) == skeleton, "\(skeleton) is not a skeleton")
            let longer = "NOT_" + skeleton
            #expect(TrackMode(remoteName: longer) == (mode == .evacuation ? .evacuation : nil), "\(longer)")
        }
    }

    /// Nothing that is not a Latin letter becomes one: other letters stay, and never match.
    @Test func lettersWithNoLatinReadingStay() {
        #expect(RemoteModeName.skeleton("ЖELTЫЙ") == "ЖELTЫЙ")
        #expect(TrackMode(remoteName: "红旗") == nil)
        #expect(TrackMode(remoteName: "R\u{0416}D") == nil)
    }
}
