/// How a venue API mode name (`global_mode`, `mode`) is read: what race control means by it, whatever
/// a hand, a copy-paste or a forger did to its spelling.
///
/// A name is first reduced to its *skeleton* (`skeleton(_:)`): invisible format characters are
/// dropped, letters that look like Latin ones (Cyrillic `Е`, Greek `Α`, fullwidth `Ｅ`, mathematical
/// `𝐄`, accented `É`) become those letters, case is folded, and whitespace, `-` and `.` become `_`,
/// trimmed from the ends. The skeleton is then matched:
///
/// - Any skeleton containing `EVACU` or `EVAKU` is an evacuation (`EVACUATE`, `EVACUATION_MODE`,
///   `EVACUATION_REQUIRED`, `EVACUACIÓN`, a misspelt `EVACUATON`, `EVAKUIERUNG`): GeoRacing's iOS app
///   matches evacuation first and by containment, and for a safety system a false alarm is the
///   lesser failure.
/// - Every other mode only by an exact skeleton from `synonyms`, the names GeoRacing's Android, iOS
///   and web apps write or accept (docs/fusion.md lists them and where each comes from). Substring
///   matching is not used for them: `CLEARING` must not read as green.
public enum RemoteModeName {
    /// Exact skeletons and the mode each names. Evacuation is matched by `evacuationMarks` as well.
    public static let synonyms: [(skeleton: String, mode: TrackMode)] = [
        ("NORMAL", .normal), ("GREEN", .normal), ("GREEN_FLAG", .normal),
        ("YELLOW", .yellowFlag), ("YELLOW_FLAG", .yellowFlag), ("CAUTION", .yellowFlag),
        ("VSC", .vsc), ("VSC_DEPLOYED", .vsc), ("VIRTUAL_SAFETY_CAR", .vsc),
        ("SC", .safetyCar), ("SAFETY_CAR", .safetyCar), ("SC_DEPLOYED", .safetyCar),
        ("RED", .redFlag), ("RED_FLAG", .redFlag),
        ("EVACUATION", .evacuation), ("EVACUATE", .evacuation), ("EVACUATION_MODE", .evacuation),
        ("EVACUATION_REQUIRED", .evacuation),
    ]

    /// A skeleton containing one of these names an evacuation: the Latin stem (`EVACUATION`, a
    /// misspelt `EVACUATON`, `EVACUACIÓN`, `ÉVACUATION`, `EVACUAZIONE`) and its K spelling
    /// (`EVAKUIERUNG`, `EVAKUACE`).
    public static let evacuationMarks = ["EVACU", "EVAKU"]

    /// The mode `name` names, or nil when it names none beacond knows.
    public static func trackMode(_ name: String) -> TrackMode? {
        let reduced = skeleton(name)
        guard !reduced.isEmpty else { return nil }
        if evacuationMarks.contains(where: { reduced.contains($0) }) { return .evacuation }
        return synonyms.first { $0.skeleton == reduced }?.mode
    }

    /// `name` reduced for comparison: format characters and controls dropped, look-alike letters
    /// made Latin, ASCII letters upper case, runs of whitespace, `-`, `.` and `_` one `_`, none at
    /// either end. Scalars with no Latin reading are kept as they are, so they never match.
    public static func skeleton(_ name: String) -> String {
        var result = ""
        var pendingSeparator = false
        for scalar in name.unicodeScalars {
            let properties = scalar.properties
            if properties.generalCategory == .format || properties.generalCategory == .control
                || properties.generalCategory == .nonspacingMark || properties.isDefaultIgnorableCodePoint
            {
                // Controls other than whitespace, format characters (U+200B, U+FEFF, U+00AD, …) and
                // combining marks (the accent of a decomposed É) are invisible: they never part words.
                if !properties.isWhitespace { continue }
            }
            if properties.isWhitespace || scalar == "-" || scalar == "." || scalar == "_" {
                pendingSeparator = true
                continue
            }
            if pendingSeparator, !result.isEmpty { result.append("_") }
            pendingSeparator = false
            if let latin = latinLetter(scalar) {
                result.unicodeScalars.append(latin)
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// The upper-case ASCII letter or digit `scalar` reads as, or nil when it reads as none.
    static func latinLetter(_ scalar: Unicode.Scalar) -> Unicode.Scalar? {
        switch scalar.value {
        case 0x30...0x39, 0x41...0x5A: return scalar
        case 0x61...0x7A: return Unicode.Scalar(scalar.value - 0x20)
        case 0x00...0x7F: return nil
        default: break
        }
        if let letter = lookAlikes[scalar] { return letter }
        // Latin letters with marks, fullwidth, small-capital and mathematical forms all name their
        // base letter: "LATIN CAPITAL LETTER E WITH ACUTE", "FULLWIDTH LATIN SMALL LETTER E",
        // "MATHEMATICAL BOLD CAPITAL E", "LATIN LETTER SMALL CAPITAL E".
        guard let name = scalar.properties.name else { return nil }
        for lead in letterNameLeads where name.hasPrefix(lead) {
            let rest = name.dropFirst(lead.count)
            guard let first = rest.unicodeScalars.first, ("A"..."Z").contains(first),
                rest.count == 1 || rest.dropFirst().hasPrefix(" WITH ")
            else { continue }
            return first
        }
        return nil
    }

    private static let letterNameLeads: [String] = {
        let styles = [
            "", "BOLD ", "ITALIC ", "BOLD ITALIC ", "SCRIPT ", "BOLD SCRIPT ", "FRAKTUR ", "DOUBLE-STRUCK ",
            "BOLD FRAKTUR ", "SANS-SERIF ", "SANS-SERIF BOLD ", "SANS-SERIF ITALIC ", "SANS-SERIF BOLD ITALIC ",
            "MONOSPACE ",
        ]
        return [
            "LATIN CAPITAL LETTER ", "LATIN SMALL LETTER ", "LATIN LETTER SMALL CAPITAL ",
            "FULLWIDTH LATIN CAPITAL LETTER ", "FULLWIDTH LATIN SMALL LETTER ",
            "CIRCLED LATIN CAPITAL LETTER ", "CIRCLED LATIN SMALL LETTER ", "FULLWIDTH DIGIT ",
        ]
            + styles.flatMap { ["MATHEMATICAL \($0)CAPITAL ", "MATHEMATICAL \($0)SMALL "] }
    }()

    /// Letters of other scripts, and symbols, drawn like a Latin letter (after Unicode's
    /// confusables, UTS #39, for the letters in mode names and their neighbours).
    private static let lookAlikes: [Unicode.Scalar: Unicode.Scalar] = {
        let pairs: [(String, String)] = [
            // Cyrillic capitals and smalls.
            ("АВЕКМНОРСТУХЅІЈԚԜҮҺӀ", "ABEKMHOPCTYXSIJQWYHI"),
            ("авекмнорстухѕіјԛԝүһӏԁ", "ABEKMHOPCTYXSIJQWYHLD"),
            // Greek capitals and smalls.
            ("ΑΒΕΖΗΙΚΜΝΟΡΤΥΧ", "ABEZHIKMNOPTYX"),
            ("αβεικνορτυχ", "ABEIKVOPTUX"),
            // Kelvin and Ångström signs, script l, dotless i, long s, Roman numerals.
            ("\u{212A}\u{212B}\u{2113}\u{0131}\u{017F}", "KALIS"),
            ("\u{2160}\u{2164}\u{2169}\u{216C}\u{216D}\u{216E}\u{216F}", "IVXLCDM"),
        ]
        var table: [Unicode.Scalar: Unicode.Scalar] = [:]
        for (from, to) in pairs {
            for (key, value) in zip(from.unicodeScalars, to.unicodeScalars) { table[key] = value }
        }
        return table
    }()
}
