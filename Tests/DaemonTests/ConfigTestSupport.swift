@testable import BeacondCore
import Foundation
import Testing

/// A private directory for one test's files, removed when the test ends.
final class ConfigScratch {
    let directory: String

    init() {
        let temporary = NSTemporaryDirectory().hasSuffix("/") ? NSTemporaryDirectory() : NSTemporaryDirectory() + "/"
        var template = Array((temporary + "beacond-config-XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(made != nil, "mkdtemp failed")
        directory = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    /// Writes `text` to `name` in the directory and returns its path.
    @discardableResult
    func write(_ name: String, _ text: String) -> String {
        let path = directory + "/" + name
        let written = FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
        precondition(written, "cannot write \(path)")
        return path
    }

    /// Loads YAML text as a config file.
    func load(_ yaml: String, overrides: DaemonOverrides = DaemonOverrides()) throws -> DaemonConfiguration {
        try DaemonConfiguration.load(path: write("beacond.yaml", yaml), overrides: overrides)
    }

    /// The error loading YAML text gives; records a failure when it loads.
    func problems(_ yaml: String, overrides: DaemonOverrides = DaemonOverrides(),
                  sourceLocation: SourceLocation = #_sourceLocation) -> [ConfigurationProblem]
    {
        do {
            _ = try load(yaml, overrides: overrides)
            Issue.record("expected a configuration error", sourceLocation: sourceLocation)
            return []
        } catch let error as ConfigurationError {
            return error.problems
        } catch {
            Issue.record("unexpected error \(error)", sourceLocation: sourceLocation)
            return []
        }
    }

    var configPath: String { directory + "/beacond.yaml" }
}

/// The repository root, found from this file's path.
enum RepositoryRoot {
    static var path: String {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }
}
