/// `status.config`: which configuration file the daemon runs with, and how its SIGHUP reloads went
/// (docs/protocol.md, "config").
package struct ConfigStatus: Hashable, Sendable, Decodable {
    /// The config file; nil when the daemon runs on built-in defaults and flags alone.
    package var path: String?
    /// SHA-256 (64 lowercase hex digits) of the exact bytes parsed for the settings in force; nil
    /// without a file.
    package var sha256: String?
    /// When those settings were loaded (at start or by the last applied reload): wall-clock ISO
    /// 8601, for people; `loadedAge` is the figure to compute with.
    package var loadedAt: String
    /// Seconds since the load, on CLOCK_BOOTTIME.
    package var loadedAge: Double
    /// Reloads applied since start (including those that changed nothing).
    package var reloads = 0
    /// Reloads refused since start: the file was invalid, and the running settings were kept.
    package var reloadFailures = 0
    /// Why the latest reload was refused (`FILE:LINE:COLUMN: KEY: REASON`, one line per problem, at
    /// most `maxFailureLength` bytes of UTF-8); nil when the latest reload was applied, or none was refused.
    package var lastFailure: String?

    /// The cap on `lastFailure`, in UTF-8 bytes: a file with thousands of problems (or a key of a
    /// million combining marks, one `Character`) does not grow every status reply.
    package static let maxFailureLength = 512

    enum CodingKeys: String, CodingKey {
        case path, sha256
        case loadedAt = "loaded_at"
        case loadedAge = "loaded_age_s"
        case reloads
        case reloadFailures = "reload_failures"
        case lastFailure = "last_failure"
    }

    package init(path: String?, sha256: String?, loadedAt: String, loadedAge: Double) {
        self.path = path
        self.sha256 = sha256
        self.loadedAt = loadedAt
        self.loadedAge = loadedAge
    }

    /// `text` cut to at most `maxFailureLength` UTF-8 bytes, between whole scalars, the cut marked
    /// with `…`.
    package static func cappedFailure(_ text: String) -> String {
        guard text.utf8.count > maxFailureLength else { return text }
        let budget = maxFailureLength - "…".utf8.count
        var kept = String.UnicodeScalarView()
        var bytes = 0
        for scalar in text.unicodeScalars {
            bytes += UTF8.width(scalar)
            if bytes > budget { break }
            kept.append(scalar)
        }
        return String(kept) + "…"
    }

    package func render(into writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("path"); writer.string(orNull: path)
        writer.key("sha256"); writer.string(orNull: sha256)
        writer.key("loaded_at"); writer.string(loadedAt)
        writer.key("loaded_age_s"); writer.number(loadedAge, decimals: 3)
        writer.key("reloads"); writer.int(reloads)
        writer.key("reload_failures"); writer.int(reloadFailures)
        writer.key("last_failure"); writer.string(orNull: lastFailure)
        writer.endObject()
    }
}
