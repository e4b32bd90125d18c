/// One language's words for the kiosk: every `KioskPhrase`, those the language's file lacks (or
/// got wrong) in English. Loaded from `languages/<code>.yaml` (`KioskCatalogueFiles`, in
/// BeacondCore); `english` needs no file.
package struct KioskCatalogue: Hashable, Sendable {
    /// The language's code, as the file is named and `kiosk.languages` lists it (`es`, `pt-BR`).
    /// The web page puts it in `lang`.
    package var language: String
    /// The language's own name (`Español`), for logs and the preview page.
    package var name: String
    private var texts: [KioskPhrase: String]

    /// `texts` over English: a phrase `texts` lacks is English's.
    package init(language: String, name: String, texts: [KioskPhrase: String] = [:]) {
        self.language = language
        self.name = name
        self.texts = texts
    }

    /// The built-in English catalogue.
    package static let english = KioskCatalogue(language: "en", name: "English")

    /// The raw text of `phrase`, placeholders unfilled.
    package func template(_ phrase: KioskPhrase) -> String {
        texts[phrase] ?? phrase.english
    }

    /// The phrases this catalogue has its own text for.
    package var translated: Set<KioskPhrase> { Set(texts.keys) }

    /// `phrase` with each `{name}` replaced by `values[name]`. A placeholder without a value stays
    /// as it is (a test catches that); values are inserted as they are, never read for placeholders.
    package func text(_ phrase: KioskPhrase, _ values: [String: String] = [:]) -> String {
        let template = template(phrase)
        guard template.contains("{") else { return template }
        var result = ""
        var rest = template[...]
        while let open = rest.firstIndex(of: "{") {
            result += rest[..<open]
            guard let close = rest[open...].firstIndex(of: "}") else { break }
            let name = String(rest[rest.index(after: open)..<close])
            if let value = values[name] {
                result += value
            } else {
                result += rest[open...close]
            }
            rest = rest[rest.index(after: close)...]
        }
        result += rest
        return result
    }

    /// The placeholder names in `template`, in order (`{zone}`: "zone"); a name is letters, digits
    /// and `_`.
    package static func placeholders(in template: String) -> [String] {
        var names: [String] = []
        var rest = template[...]
        while let open = rest.firstIndex(of: "{") {
            guard let close = rest[open...].firstIndex(of: "}") else { break }
            let name = rest[rest.index(after: open)..<close]
            if !name.isEmpty, name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }) {
                names.append(String(name))
            }
            rest = rest[rest.index(after: close)...]
        }
        return names
    }

    /// Whether `code` can name a language: a BCP 47-like tag of ASCII letters and digits, 2 to 3
    /// letters first, then `-` parts (`es`, `ca`, `pt-BR`, `sr-Latn`), at most 16 characters.
    /// Only such a code is looked up as a file name.
    package static func isLanguageCode(_ code: String) -> Bool {
        guard code.utf8.count <= 16 else { return false }
        let parts = code.split(separator: "-", omittingEmptySubsequences: false)
        guard let first = parts.first, (2...3).contains(first.count),
            first.allSatisfy({ $0.isASCII && $0.isLowercase })
        else { return false }
        return parts.dropFirst().allSatisfy { part in
            (1...8).contains(part.count) && part.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) }
        }
    }
}
