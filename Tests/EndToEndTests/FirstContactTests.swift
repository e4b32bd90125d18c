import BeacondCore
import BeacondTestSupport
import Foundation
import Testing

/// Issue 26: the errors a new user meets first say what to do next.
@Suite struct FirstContactTests {
    @Test func aSocketInAMissingDirectorySaysToInstallOrPassASocket() throws {
        let directory = "/nonexistent-beacond-\(getpid())"
        let result = try BeacondProcess.run([
            "run", "--backend", "replay", "--replay", ReplayCommandTests.example, "--socket", directory + "/b.sock",
            "--state-dir", NSTemporaryDirectory(),
        ])
        #expect(result.status == 1)
        #expect(
            result.stderr.contains(
                "beacond run: cannot listen on \(directory)/b.sock: the directory \(directory) does not exist. "
                    + "To run beacond by hand, give it a socket in a directory you can write: "
                    + "--socket /tmp/beacond.sock (and --state-dir /tmp)."), "\(result.stderr)")
        // The installed daemon's own path also says where that directory comes from.
        let installed = TrackStateServerError.directoryUnusable(path: TrackStateServer.defaultPath, code: ENOENT)
        #expect(
            installed.description.hasPrefix(
                "cannot listen on /run/beacond/beacond.sock: the directory /run/beacond does not exist. "
                    + "It is the installed daemon's: `sudo make install` creates it for the beacond user"))
        let unwritable = TrackStateServerError.directoryUnusable(path: "/root/b.sock", code: EACCES)
        #expect(unwritable.description.contains("the directory /root is not writable by this user."))
    }

    @Test func aDuplicateConfigKeyIsReportedWhereItRepeats() throws {
        let config = try ConfigExitCodeTests.writeConfig(
            "first-contact-duplicate.yaml", "fusion:\n  policy: safety\n  min_rssi: -90\n  policy: most-severe\n")
        let result = try BeacondProcess.run(["run", "--config", config])
        #expect(result.status == 78)
        #expect(result.stderr.contains("\(config):4:3: duplicate key \"policy\" (first at line 2)"), "\(result.stderr)")
    }

    /// Help names the documents where they are: an installed binary its share/doc folder, a build
    /// the source tree's docs/.
    @Test func helpNamesTheDocumentsWhereTheyAre() throws {
        let built = try BeacondProcess.run(["help", "run"])
        #expect(built.stdout.contains("see CONFIGURATION in man beacond, and docs/configuration.md"), "\(built.stdout)")
        let root = BeacondProcess.temporaryFile("first-contact-prefix-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(atPath: root + "/bin", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: root + "/share/doc/beacond", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        // A hard link, not a copy: a copy's write descriptor can leak into a process another test
        // forks meanwhile, and executing the copy then fails with ETXTBSY ("Text file busy").
        if link(BeacondProcess.executable.path, root + "/bin/beacond") != 0 {
            try FileManager.default.copyItem(atPath: BeacondProcess.executable.path, toPath: root + "/bin/beacond")
        }
        let installed = try BeacondProcess.run(URL(fileURLWithPath: root + "/bin/beacond"), ["help", "status"])
        let unwrapped = installed.stdout.split(separator: "\n").joined(separator: " ")
        #expect(unwrapped.contains("see \(root)/share/doc/beacond/protocol.md"), "\(installed.stdout)")
        #expect(DocumentationPath.named("mqtt.md", executable: "beacond") == "docs/mqtt.md")
    }

    /// The example config names no file that nothing installs, and says how to make the capture.
    @Test func theExampleConfigNamesOnlyFilesThatCanExist() throws {
        let text = try String(contentsOfFile: RepositoryPaths.root.path + "/systemd/beacond.yaml", encoding: .utf8)
        #expect(!text.contains("/usr/share/beacond"))
        let replay = try #require(text.split(separator: "\n").first { $0.hasPrefix("  # replay: ") })
        let path = replay.dropFirst("  # replay: ".count)
        #expect(text.contains("`beacond example-capture \(path)` writes the bundled example there."))
    }
}
