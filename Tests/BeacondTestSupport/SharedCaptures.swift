import Foundation

/// The real public captures beside the checkout (`../shared/captures`, or the folder
/// `BEACOND_SHARED_CAPTURES` names), with what tshark made of them in `expected/`. Tests read them
/// in place, never copy them in.
package enum SharedCaptures {
    package static let directory: URL = {
        if let override = ProcessInfo.processInfo.environment["BEACOND_SHARED_CAPTURES"] {
            return URL(fileURLWithPath: override)
        }
        // Tests/BeacondTestSupport/SharedCaptures.swift → the folder holding the checkout.
        return URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("shared/captures")
    }()

    /// The captures and their expectations are there.
    package static var available: Bool {
        FileManager.default.fileExists(atPath: directory.appendingPathComponent("expected").path)
    }

    package static func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
}
