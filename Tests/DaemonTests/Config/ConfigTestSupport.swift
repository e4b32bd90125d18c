import BeacondTestSupport
import Foundation
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// A private directory for one test's files, removed when the test ends.
final class ConfigScratch {
    private let scratch: TemporaryDirectory
    var directory: String { scratch.path }

    init() {
        do {
            scratch = try TemporaryDirectory(prefix: "beacond-config")
        } catch {
            preconditionFailure("\(error)")
        }
    }

    /// Writes `text` to `name` in the directory and returns its path.
    @discardableResult
    func write(_ name: String, _ text: String) -> String {
        do {
            return try scratch.write(name, text)
        } catch {
            preconditionFailure("\(error)")
        }
    }

    /// Loads YAML text as a config file.
    func load(_ yaml: String, overrides: DaemonOverrides = DaemonOverrides()) throws -> DaemonConfiguration {
        try DaemonConfiguration.load(path: write("beacond.yaml", yaml), overrides: overrides)
    }

    /// The error loading YAML text gives; records a failure when it loads.
    func problems(
        _ yaml: String, overrides: DaemonOverrides = DaemonOverrides(),
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> [ConfigurationProblem] {
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
