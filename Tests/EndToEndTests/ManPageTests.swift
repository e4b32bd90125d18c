import BeacondCore
import BeacondTestSupport
import Foundation
import Testing

/// docs/beacond.8: it renders without warnings, and it cannot drift from the binary: every
/// subcommand and flag the binary has (its ArgumentParser dump) and every key of the config key
/// table is in it.
@Suite(.enabled(if: SystemTool.available("groff", "man"), "groff or man is not installed"))
struct ManPageTests {
    static let page = SystemTool.repository + "/docs/beacond.8"

    /// The page as plain text, wide and without hyphenation, so that no name is split.
    static func rendered() throws -> [Substring] {
        let result = try SystemTool.run("groff", ["-man", "-rHY=0", "-rLL=250n", "-Tutf8", "-P-cbou", page])
        #expect(result.status == 0, "\(result.stderr)")
        return result.stdout.split(separator: "\n", omittingEmptySubsequences: false)
    }

    /// The lines of each section (`.SH`, flush left) and subsection (`.SS`, indented 3).
    static func sections(_ lines: [Substring]) -> [(heading: String, level: Int, body: [Substring])] {
        var sections: [(heading: String, level: Int, body: [Substring])] = []
        for line in lines {
            let indent = line.prefix { $0 == " " }.count
            let text = line.trimmingCharacters(in: .whitespaces)
            if !text.isEmpty, indent == 0 || indent == 3, !line.hasPrefix("BEACOND(8)"), !line.hasPrefix("beacond 0") {
                sections.append((text, indent == 0 ? 1 : 2, []))
            } else if !sections.isEmpty {
                sections[sections.count - 1].body.append(line)
            }
        }
        return sections
    }

    static func contains(_ text: String, word: String) -> Bool {
        text.range(
            of: "(^|[^A-Za-z0-9_-])" + NSRegularExpression.escapedPattern(for: word) + "($|[^A-Za-z0-9_-])",
            options: .regularExpression) != nil
    }

    @Test func rendersWithoutWarnings() throws {
        let groff = try SystemTool.run("groff", ["-ww", "-z", "-man", Self.page])
        #expect(groff.status == 0 && groff.stderr.isEmpty, "groff: \(groff.stderr)")
        let man = try SystemTool.run("man", ["-l", "--warnings", Self.page], environment: ["MANWIDTH": "80"])
        #expect(man.status == 0 && man.stderr.isEmpty, "man: \(man.stderr)")
        #expect(man.stdout.contains("beacond - GeoRacing track-status daemon"))
    }

    @Test func hasTheSectionsOfADaemonsPage() throws {
        let headings = Self.sections(try Self.rendered()).filter { $0.level == 1 }.map(\.heading)
        #expect(
            headings == [
                "NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "CONFIGURATION", "SIGNALS", "EXIT STATUS",
                "ENVIRONMENT", "FILES", "EXAMPLES", "SEE ALSO",
            ])
    }

    /// Each subcommand has a subsection ("beacond replay", "beacond replay --timeline") naming
    /// every one of its flags.
    @Test func namesEverySubcommandAndEachOfItsFlags() throws {
        let dump = try BeacondProcess.run(["--experimental-dump-help"])
        #expect(dump.status == 0)
        let tool = try #require(try JSONSerialization.jsonObject(with: Data(dump.stdout.utf8)) as? [String: Any])
        let root = try #require(tool["command"] as? [String: Any])
        let subcommands = try #require(root["subcommands"] as? [[String: Any]])
        let sections = Self.sections(try Self.rendered())
        let synopsis = sections.first { $0.heading == "SYNOPSIS" }?.body.joined(separator: "\n") ?? ""
        let description = sections.first { $0.heading == "DESCRIPTION" }?.body.joined(separator: "\n") ?? ""
        #expect(Self.contains(description, word: "--help") && Self.contains(description, word: "--version"))
        var checked = 0
        for command in subcommands {
            let name = try #require(command["commandName"] as? String)
            if name == "help" { continue }
            #expect(synopsis.contains("beacond \(name)"), "SYNOPSIS has no beacond \(name)")
            let own = sections.filter {
                $0.level == 2 && ($0.heading == "beacond \(name)" || $0.heading.hasPrefix("beacond \(name) "))
            }
            let text = own.map { $0.heading + "\n" + $0.body.joined(separator: "\n") }.joined(separator: "\n")
            #expect(!text.isEmpty, "no subsection for beacond \(name)")
            for argument in command["arguments"] as? [[String: Any]] ?? [] {
                guard argument["kind"] as? String != "positional" else { continue }
                for entry in argument["names"] as? [[String: Any]] ?? [] where entry["kind"] as? String == "long" {
                    guard let flag = entry["name"] as? String, flag != "help", flag != "version" else { continue }
                    #expect(Self.contains(text, word: "--" + flag), "beacond \(name): --\(flag) is not documented")
                    checked += 1
                }
            }
        }
        #expect(checked > 50, "only \(checked) flags checked")
    }

    /// Every key of the config key table has an entry in CONFIGURATION (the key on a line of its
    /// own, as .TP sets it), and the entry names the key's flag.
    @Test func namesEveryConfigKeyAndItsFlag() throws {
        let body = Self.sections(try Self.rendered()).first { $0.heading == "CONFIGURATION" }?.body ?? []
        for key in ConfigKey.allCases {
            let start = body.firstIndex { $0.trimmingCharacters(in: .whitespaces) == key.rawValue }
            #expect(start != nil, "\(key.rawValue) has no entry")
            guard let start, let flag = key.flag else { continue }
            let entry = body[start...].dropFirst().prefix { line in
                !ConfigKey.allCases.contains { $0.rawValue == line.trimmingCharacters(in: .whitespaces) }
            }.joined(separator: " ")
            #expect(Self.contains(entry, word: flag), "\(key.rawValue): its flag \(flag) is not named")
        }
    }

    @Test func namesTheSignalsAndExitCodes() throws {
        let sections = Self.sections(try Self.rendered())
        let signals = sections.first { $0.heading == "SIGNALS" }?.body.joined(separator: "\n") ?? ""
        for signal in ["SIGTERM", "SIGINT", "SIGHUP", "SIGWINCH"] {
            #expect(Self.contains(signals, word: signal), "\(signal)")
        }
        let codes = (sections.first { $0.heading == "EXIT STATUS" }?.body ?? [])
            .map { $0.trimmingCharacters(in: .whitespaces) }.compactMap { $0.split(separator: " ").first }
        for code in ["0", "1", "64", "78"] { #expect(codes.contains(Substring(code)), "exit code \(code)") }
    }
}
