import BeacondTestSupport
import Foundation

/// The system tools the install tests drive (make, systemd-analyze, groff, man ...), found on PATH.
enum SystemTool {
    private static let searchPath = ["/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin"]

    /// The tool's path, or nil when it is not installed.
    static func path(_ name: String) -> String? {
        searchPath.map { $0 + "/" + name }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    static func available(_ names: String...) -> Bool { names.allSatisfy { path($0) != nil } }

    /// Runs `name` with `arguments` to its end; `environment` is added to the test's own.
    static func run(
        _ name: String, _ arguments: [String], environment: [String: String] = [:]
    ) throws -> BeacondProcess.Result {
        guard let tool = path(name) else { throw TestSupportError("\(name) is not installed") }
        let assignments = environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        return try BeacondProcess.run(URL(fileURLWithPath: "/usr/bin/env"), assignments + [tool] + arguments)
    }

    /// The repository root (the Makefile, systemd/, docs/).
    static var repository: String { RepositoryPaths.root.path }

    /// `make -s -C <repository> arguments`.
    static func make(_ arguments: [String]) throws -> BeacondProcess.Result {
        try run("make", ["-s", "-C", repository] + arguments)
    }

    /// The permission bits of `path` (lstat), or nil when it does not exist.
    static func mode(_ path: String) -> mode_t? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return info.st_mode & 0o7777
    }

    /// Every regular file below `directory`, as paths relative to it.
    static func files(below directory: String) -> [String] {
        guard let walker = FileManager.default.enumerator(atPath: directory) else { return [] }
        var found: [String] = []
        while let relative = walker.nextObject() as? String {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: directory + "/" + relative, isDirectory: &isDirectory),
                !isDirectory.boolValue
            {
                found.append(relative)
            }
        }
        return found.sorted()
    }
}
