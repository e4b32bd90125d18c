/// A checked `mqtt.url`: `mqtt://host[:port]` or `mqtts://host[:port]` (TLS). The one validator for it:
/// the config file, the `--mqtt-url` flag and `beacond venue --mqtt-url` parse with it.
package struct MqttURL: Hashable, Sendable, CustomStringConvertible {
    /// Why a URL was refused.
    package struct Problem: Error, Hashable, Sendable {
        package var reason: String
    }

    package static let defaultPort = 1883
    package static let defaultTLSPort = 8883

    /// A host name or an IP address, without IPv6 brackets.
    package let host: String
    package let port: Int
    /// `mqtts://`: TLS, checked against `mqtt.ca_file` (else the system's CA store).
    package let isTLS: Bool

    package init(parsing text: String) throws(Problem) {
        let quoted = TerminalText.quoted(text)
        guard let separator = text.firstRange(of: "://") else {
            throw Problem(reason: "\(quoted) is not a URL (expected mqtt://host:1883 or mqtts://host:8883)")
        }
        let scheme = text[..<separator.lowerBound].lowercased()
        switch scheme {
        case "mqtt": isTLS = false
        case "mqtts": isTLS = true
        default:
            throw Problem(
                reason: "unsupported URL scheme \(TerminalText.quoted(scheme)) (expected mqtt or mqtts)")
        }
        var rest = Substring(text[separator.upperBound...])
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard !rest.contains(where: { $0.isWhitespace || $0 == "/" || $0 == "?" || $0 == "#" }) else {
            throw Problem(reason: "\(quoted) has a path, a query or whitespace; expected only host and port")
        }
        guard !rest.contains("@") else {
            throw Problem(reason: "\(quoted) holds credentials; use mqtt.username and mqtt.password_file")
        }
        var hostPart = rest
        var portText: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { throw Problem(reason: "\(quoted) has an unclosed [") }
            hostPart = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw Problem(reason: "\(quoted) is not host:port") }
                portText = after.dropFirst()
            }
        } else if let colon = rest.lastIndex(of: ":") {
            hostPart = rest[..<colon]
            portText = rest[rest.index(after: colon)...]
        }
        guard !hostPart.isEmpty, hostPart.utf8.count <= 253 else { throw Problem(reason: "\(quoted) has no host") }
        host = String(hostPart)
        if let portText {
            guard let number = Int(portText), (1...65535).contains(number) else {
                throw Problem(reason: "\(quoted) has a bad port (expected 1-65535)")
            }
            port = number
        } else {
            port = isTLS ? Self.defaultTLSPort : Self.defaultPort
        }
    }

    package var description: String {
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return "\(isTLS ? "mqtts" : "mqtt")://\(shownHost):\(port)"
    }
}

/// Topic levels beacond writes: `mqtt.topic_prefix` and `mqtt.node` become parts of topic names, so
/// they hold no wildcard (`+`, `#`), no NUL, no spaces and (the node) no `/`.
package enum MqttTopicText {
    package static let maxNodeBytes = 64
    package static let maxPrefixBytes = 128

    /// Letters, digits, `.`, `_` and `-`: a node name is one topic level.
    package static func isNodeCharacter(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, 0x2D, 0x2E, 0x5F: true
        default: false
        }
    }

    /// Nil when `text` is a valid node name; else why not.
    package static func nodeProblem(_ text: String) -> String? {
        if text.isEmpty { return "must not be empty" }
        if text.utf8.count > maxNodeBytes { return "is longer than \(maxNodeBytes) bytes" }
        guard text.unicodeScalars.allSatisfy(isNodeCharacter) else {
            return "\(TerminalText.quoted(text)) may hold only letters, digits, '.', '_' and '-'"
        }
        return nil
    }

    /// Nil when `text` is a valid prefix: node-name levels joined by `/`.
    package static func prefixProblem(_ text: String) -> String? {
        if text.utf8.count > maxPrefixBytes { return "is longer than \(maxPrefixBytes) bytes" }
        let levels = text.split(separator: "/", omittingEmptySubsequences: false)
        guard !text.isEmpty, levels.allSatisfy({ !$0.isEmpty && $0.unicodeScalars.allSatisfy(isNodeCharacter) }) else {
            return "\(TerminalText.quoted(text)) must be levels of letters, digits, '.', '_' and '-' joined by '/'"
        }
        return nil
    }

    /// `name` made a node name: other characters become `-`, cut to `maxNodeBytes`; `beacond` when empty.
    package static func nodeName(from name: String) -> String {
        let scalars = name.unicodeScalars.prefix(maxNodeBytes).map { isNodeCharacter($0) ? Character($0) : "-" }
        return scalars.isEmpty ? "beacond" : String(scalars)
    }
}
