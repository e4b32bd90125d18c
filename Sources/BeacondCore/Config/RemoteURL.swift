import Foundation

/// A checked `remote.url`: `http://host…`, `https://host…` or `file:///path`. The one validator for it:
/// the config file, the `--remote-url` flag, reloads and the poller's `RemoteEndpoint` all parse with it.
struct RemoteURL: Hashable, Sendable {
    /// What the URL reaches.
    enum Target: Hashable, Sendable {
        /// `http://` (`secure`: `https://`): fetched with a GET.
        case http(secure: Bool)
        /// `file://`: the absolute path, percent-escapes decoded, without `?query` or `#fragment`.
        case file(path: String)
    }

    /// Why a URL was refused; `reason` names it quoted (`"ftp://x" …`) unless it is about the scheme.
    struct Problem: Error, Hashable, Sendable {
        var reason: String
    }

    /// The URL as given.
    let text: String
    let target: Target

    init(parsing text: String) throws(Problem) {
        let quoted = ConfigValueParser.quoted(text)
        guard let separator = text.firstRange(of: "://") else {
            throw Problem(reason: "\(quoted) is not a URL (expected http://, https:// or file://)")
        }
        let schemeText = text[..<separator.lowerBound].lowercased()
        let rest = text[separator.upperBound...]
        if text.contains(where: \.isWhitespace) { throw Problem(reason: "\(quoted) contains whitespace") }
        self.text = text
        switch schemeText {
        case "http", "https":
            let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
            let host = authority.split(separator: "@").last.map(String.init) ?? ""
            if host.isEmpty || host.hasPrefix(":") { throw Problem(reason: "\(quoted) has no host") }
            // What the HTTP client will parse: refused here rather than on every fetch.
            guard let url = URL(string: text), let parsedHost = url.host, !parsedHost.isEmpty else {
                throw Problem(reason: "\(quoted) is not a valid URL")
            }
            target = .http(secure: schemeText == "https")
        case "file":
            guard rest.hasPrefix("/") else { throw Problem(reason: "\(quoted) needs an absolute path (file:///path)") }
            let encoded = rest.prefix { $0 != "?" && $0 != "#" }
            guard let path = String(encoded).removingPercentEncoding, !path.contains("\0") else {
                throw Problem(reason: "\(quoted) has a bad percent-escape in its path")
            }
            target = .file(path: path)
        default:
            throw Problem(
                reason: "unsupported URL scheme \(ConfigValueParser.quoted(schemeText)) "
                    + "(expected http, https or file)")
        }
    }
}
