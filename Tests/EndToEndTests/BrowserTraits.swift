import Foundation
import Testing

/// The conditions of the suites that open pages in Debian's Chromium, said once.
extension Trait where Self == ConditionTrait {
    static var chromiumInstalled: Self {
        .enabled(
            if: FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium"),
            "/usr/bin/chromium is missing: `make deps` installs chromium")
    }

    /// python3 runs the browser fixtures: `why` says which (decoding screenshots, driving Chromium).
    static func python3Installed(_ why: String) -> Self {
        .enabled(
            if: FileManager.default.isExecutableFile(atPath: "/usr/bin/python3"), "/usr/bin/python3 is missing (\(why))"
        )
    }
}
