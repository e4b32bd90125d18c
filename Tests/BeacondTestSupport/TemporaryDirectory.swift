import Foundation
import Glibc
import Synchronization

/// A private directory (mkdtemp, mode 0700) for one test's files, removed when the object goes.
/// `TemporaryDirectory(short: true)` makes it directly under /tmp with a short name, for unix
/// socket paths (at most 107 bytes).
package final class TemporaryDirectory: @unchecked Sendable {
    package let path: String
    /// Left in place when the object goes.
    fileprivate var keep = false

    package init(prefix: String = "beacond", short: Bool = false) throws {
        let base: String
        if short {
            base = "/tmp/"
        } else {
            let system = NSTemporaryDirectory()
            base = system.hasSuffix("/") ? system : system + "/"
        }
        var template = Array((base + prefix + "-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            throw TestSupportError("mkdtemp \(base + prefix)-XXXXXX failed: errno \(errno)")
        }
        path = String(cString: made)
    }

    deinit {
        if !keep { try? FileManager.default.removeItem(atPath: path) }
    }

    /// `name`'s path inside the directory.
    package func file(_ name: String) -> String { path + "/" + name }

    /// Writes `text` to `name` in the directory and returns its path.
    @discardableResult
    package func write(_ name: String, _ text: String) throws -> String {
        let file = file(name)
        guard FileManager.default.createFile(atPath: file, contents: Data(text.utf8)) else {
            throw TestSupportError("cannot write \(file)")
        }
        return file
    }
}

/// A test helper's failure, with what went wrong.
package struct TestSupportError: Error, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}

/// Paths in the repository, found from this file's path.
package enum RepositoryPaths {
    /// The repository root.
    package static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// A file in Tests/BeacondTestSupport/Fixtures.
    package static func fixture(_ name: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/" + name).path
    }
}

extension TemporaryDirectory {
    /// A fresh private directory that outlives the test (for files a test hands to a process
    /// or to an object that outlives the scope), removed when the test process exits.
    package static func make(prefix: String = "beacond", short: Bool = false) throws -> String {
        let directory = try TemporaryDirectory(prefix: prefix, short: short)
        directory.keep = true
        removeAtExit(directory.path)
        return directory.path
    }

    /// Removes `path` (a folder this process made) with everything in it when the process exits,
    /// so a test run leaves nothing behind in the temporary directory.
    package static func removeAtExit(_ path: String) {
        _ = exitHandlerInstalled
        leftovers.withLock { _ = $0.insert(path) }
    }
}

private let leftovers = Mutex<Set<String>>([])

private let exitHandlerInstalled: Void = {
    atexit {
        for path in leftovers.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: path) }
    }
}()
