import BeacondTestSupport
import Foundation
import Testing

/// `make install` and `make uninstall` into a staging root (DESTDIR), with the built debug binary
/// (BINARY=) so that the test needs no release build.
@Suite(.enabled(if: SystemTool.available("make"), "make is not installed"))
struct InstallTests {
    static let binary = BeacondProcess.executable.path

    /// The user units among systemd/'s units; every other unit is a system unit.
    static let userUnits: Set<String> = ["beacond-kiosk-browser.service"]

    /// Every file `make install` must put under `prefix` (and /etc), with its mode, derived from
    /// the repository's systemd/ and docs/ folders so that a new unit or document must be installed.
    static func expectedFiles(prefix: String) throws -> [String: mode_t] {
        let root = SystemTool.repository
        let units = try FileManager.default.contentsOfDirectory(atPath: root + "/systemd")
            .filter { $0.hasSuffix(".service") || $0.hasSuffix(".socket") }
        #expect(units.count >= 5, "systemd/ lists \(units)")
        let docs = try FileManager.default.contentsOfDirectory(atPath: root + "/docs")
            .filter { $0.hasSuffix(".md") || $0.hasSuffix(".desktop") }
        var expected: [String: mode_t] = [
            "\(prefix)/bin/beacond": 0o755,
            "\(prefix)/share/man/man8/beacond.8": 0o644,
            "\(prefix)/lib/sysusers.d/beacond.conf": 0o644,
            "\(prefix)/lib/tmpfiles.d/beacond.conf": 0o644,
            "\(prefix)/share/doc/beacond/README.md": 0o644,
            "\(prefix)/share/doc/beacond/beacond.yaml.example": 0o644,
            "etc/beacond/beacond.yaml": 0o644,
        ]
        for unit in units {
            let folder = userUnits.contains(unit) ? "user" : "system"
            expected["\(prefix)/lib/systemd/\(folder)/\(unit)"] = 0o644
        }
        for doc in docs { expected["\(prefix)/share/doc/beacond/\(doc)"] = 0o644 }
        let languages = try FileManager.default.contentsOfDirectory(atPath: root + "/languages")
            .filter { $0.hasSuffix(".yaml") }
        #expect(languages.count >= 7, "languages/ lists \(languages)")
        for file in languages { expected["\(prefix)/share/beacond/languages/\(file)"] = 0o644 }
        return expected
    }

    static func install(into root: String, _ extra: [String] = []) throws {
        let result = try SystemTool.make(["install", "DESTDIR=\(root)", "BINARY=\(binary)"] + extra)
        #expect(result.status == 0, "make install: \(result.stderr)")
    }

    static func uninstall(from root: String, _ extra: [String] = []) throws {
        let result = try SystemTool.make(["uninstall", "DESTDIR=\(root)"] + extra)
        #expect(result.status == 0, "make uninstall: \(result.stderr)")
    }

    @Test func installsExactlyTheExpectedFilesWithTheirModesAndUninstallRemovesThem() throws {
        let root = try TemporaryDirectory(prefix: "beacond-install")
        try Self.install(into: root.path)
        let expected = try Self.expectedFiles(prefix: "usr/local")
        let installed = SystemTool.files(below: root.path)
        #expect(installed == expected.keys.sorted())
        for (file, mode) in expected {
            let actual = SystemTool.mode(root.file(file))
            #expect(actual == mode, "\(file): mode \(actual.map { String($0, radix: 8) } ?? "missing")")
        }
        let installedBinary = FileManager.default.contents(atPath: root.file("usr/local/bin/beacond"))
        #expect(installedBinary == FileManager.default.contents(atPath: Self.binary), "the binary is BINARY's copy")
        let example = FileManager.default.contents(atPath: SystemTool.repository + "/systemd/beacond.yaml")
        #expect(FileManager.default.contents(atPath: root.file("etc/beacond/beacond.yaml")) == example)
        // The installed binary finds the catalogues installed beside it (PREFIX/share/beacond/languages).
        let config = try root.write("kiosk.yaml", "kiosk:\n  languages: [ca]\n")
        let frame = try BeacondProcess.run(
            URL(fileURLWithPath: "/usr/bin/env"),
            [
                "COLUMNS=80", "LINES=24", root.file("usr/local/bin/beacond"), "kiosk", "--once", "--config", config,
                "--socket", root.path + "/absent.sock",
            ])
        let status = frame.lines.last?.trimmingCharacters(in: .whitespaces)
        #expect(frame.status == 1 && status == "SENSE SENYAL — daemon inaccessible", "\(frame.stdout)")
        #expect(frame.stderr == "", "no catalogue problem: \(frame.stderr)")
        try FileManager.default.removeItem(atPath: config)

        try Self.uninstall(from: root.path)
        #expect(SystemTool.files(below: root.path) == [], "left behind after make uninstall")
    }

    @Test func theUnitsNameThePrefixsBinaryAndDocuments() throws {
        let root = try TemporaryDirectory(prefix: "beacond-install")
        try Self.install(into: root.path, ["PREFIX=/opt/beacond"])
        let units = SystemTool.files(below: root.path).filter { $0.contains("/lib/systemd/") }
        #expect(units.count >= 5)
        var execStarts = 0
        for unit in units {
            let text = try String(contentsOfFile: root.file(unit), encoding: .utf8)
            #expect(!text.contains("/usr/local"), "\(unit) still names /usr/local")
            for line in text.split(separator: "\n") where line.hasPrefix("ExecStart=") && line.contains("beacond ") {
                #expect(line.hasPrefix("ExecStart=/opt/beacond/bin/beacond "), "\(unit): \(line)")
                execStarts += 1
            }
            // Every document a unit points at is installed.
            for line in text.split(separator: "\n") where line.hasPrefix("Documentation=") {
                for url in line.dropFirst("Documentation=".count).split(separator: " ") where url.hasPrefix("file:") {
                    let path = String(url.dropFirst("file:".count))
                    #expect(path.hasPrefix("/opt/beacond/share/doc/beacond/"), "\(unit): \(url)")
                    #expect(FileManager.default.fileExists(atPath: root.path + path), "\(unit): \(url) not installed")
                }
            }
        }
        #expect(execStarts == 3, "beacond.service, beacond-kiosk@.service, beacond-kiosk-web.service")
        let manPage = try String(contentsOfFile: root.file("opt/beacond/share/man/man8/beacond.8"), encoding: .utf8)
        #expect(!manPage.contains("/usr/local"), "the man page still names /usr/local")
        #expect(manPage.contains("/opt/beacond/share/doc/beacond"))
        #expect(FileManager.default.isExecutableFile(atPath: root.file("opt/beacond/bin/beacond")))
        try Self.uninstall(from: root.path, ["PREFIX=/opt/beacond"])
        #expect(SystemTool.files(below: root.path) == [])
    }

    @Test func anEditedConfigIsNeitherOverwrittenNorRemoved() throws {
        let root = try TemporaryDirectory(prefix: "beacond-install")
        try FileManager.default.createDirectory(
            atPath: root.file("etc/beacond"), withIntermediateDirectories: true)
        let site = "fusion:\n  policy: most-severe\n"
        try root.write("etc/beacond/beacond.yaml", site)
        try Self.install(into: root.path)
        #expect(try String(contentsOfFile: root.file("etc/beacond/beacond.yaml"), encoding: .utf8) == site)
        #expect(FileManager.default.fileExists(atPath: root.file("usr/local/share/doc/beacond/beacond.yaml.example")))
        try Self.uninstall(from: root.path)
        #expect(SystemTool.files(below: root.path) == ["etc/beacond/beacond.yaml"])
    }

    /// The installed sysusers.d and tmpfiles.d files, applied to the staging root, create the
    /// beacond user and its two directories with the modes the units expect.
    @Test(
        .enabled(if: SystemTool.available("systemd-sysusers", "systemd-tmpfiles"), "no systemd-sysusers"),
        .enabled(if: getuid() == 0, "systemd-tmpfiles needs root to chown in the staging root"))
    func sysusersAndTmpfilesCreateTheUserAndItsDirectories() throws {
        let root = try TemporaryDirectory(prefix: "beacond-install")
        try Self.install(into: root.path)
        let sysusers = try SystemTool.run(
            "systemd-sysusers", ["--root=\(root.path)", root.file("usr/local/lib/sysusers.d/beacond.conf")])
        #expect(sysusers.status == 0, "\(sysusers.stderr)")
        let passwd = try String(contentsOfFile: root.file("etc/passwd"), encoding: .utf8)
        let entry = try #require(passwd.split(separator: "\n").first { $0.hasPrefix("beacond:") })
        let fields = entry.split(separator: ":", omittingEmptySubsequences: false)
        #expect(fields.count == 7 && fields[5] == "/var/lib/beacond" && fields[6] == "/usr/sbin/nologin")
        let uid = try #require(fields.count > 2 ? UInt32(fields[2]) : nil)
        let tmpfiles = try SystemTool.run(
            "systemd-tmpfiles",
            ["--root=\(root.path)", "--create", root.file("usr/local/lib/tmpfiles.d/beacond.conf")])
        #expect(tmpfiles.status == 0, "\(tmpfiles.stderr)")
        for (directory, mode) in [("run/beacond", mode_t(0o755)), ("var/lib/beacond", 0o750)] {
            var info = stat()
            #expect(stat(root.file(directory), &info) == 0, "\(directory) missing")
            #expect(info.st_mode & 0o7777 == mode && info.st_uid == uid, "\(directory)")
        }
    }
}
