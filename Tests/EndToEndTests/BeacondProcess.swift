import BeacondTestSupport
import Foundation

/// Runs the built `beacond` executable, as a user would.
struct BeacondProcess {
    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String

        var lines: [String] { stdout.split(separator: "\n").map(String.init) }

        func jsonLines() throws -> [[String: Any]] {
            try lines.map { line in
                guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                    throw CocoaError(.coderInvalidValue)
                }
                return object
            }
        }
    }

    /// The beacond binary beside the test bundle in the build folder.
    static let executable: URL = {
        let me =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var directory = URL(fileURLWithPath: me).deletingLastPathComponent()
        if directory.lastPathComponent == "Contents" || directory.lastPathComponent == "MacOS" {
            directory = directory.deletingLastPathComponent()
        }
        return directory.appendingPathComponent("beacond")
    }()

    static func run(_ arguments: [String]) throws -> Result {
        try run(executable, arguments)
    }

    /// Runs `tool` with `arguments` to its end, collecting its output and status; `environment`
    /// is added to the test's own.
    static func run(_ tool: URL, _ arguments: [String], environment: [String: String] = [:]) throws -> Result {
        let process = Process()
        process.executableURL = tool
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, added in added }
        }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        // Read both pipes concurrently so neither fills up and blocks the child.
        nonisolated(unsafe) var errData = Data()
        let errReader = DispatchQueue.global()
        let group = DispatchGroup()
        group.enter()
        errReader.async {
            errData = err.fileHandleForReading.readDataToEndOfFile()
            group.leave()
        }
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        group.wait()
        process.waitUntilExit()
        return Result(
            status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errData, as: UTF8.self))
    }

    static func temporaryFile(_ name: String) -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("beacond-e2e-\(getpid())")
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        TemporaryDirectory.removeAtExit(directory.path)
        return directory.appendingPathComponent(name).path
    }
}
