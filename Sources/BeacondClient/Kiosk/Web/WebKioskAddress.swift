import Glibc

/// `--web ADDR:PORT`: where the web kiosk listens. `127.0.0.1:8080`, `[::1]:8080`,
/// `localhost:8080` (bound as 127.0.0.1, never resolved), `0.0.0.0:8080`; port 0 picks a free one.
package struct WebKioskAddress: Hashable, Sendable, CustomStringConvertible {
    package enum ParseError: Error, Equatable, CustomStringConvertible {
        case missingPort(String)
        case badPort(String)
        case badHost(String)

        package var description: String {
            switch self {
            case .missingPort(let text):
                "'\(text)' has no port: give ADDR:PORT, e.g. 127.0.0.1:8080 or [::1]:8080"
            case .badPort(let text): "'\(text)': the port must be a number from 0 to 65535"
            case .badHost(let text):
                "'\(text)': the address must be an IPv4 or bracketed IPv6 address, or localhost"
            }
        }
    }

    /// The address bound (`localhost` becomes 127.0.0.1).
    package var host: String
    package var port: Int

    package init(parsing text: String) throws(ParseError) {
        let hostPart: Substring
        let portPart: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { throw .badHost(text) }
            hostPart = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { throw .missingPort(text) }
            portPart = rest.dropFirst()
            guard Self.ipv6Bytes(String(hostPart)) != nil else { throw .badHost(text) }
        } else {
            guard let colon = text.lastIndex(of: ":") else { throw .missingPort(text) }
            hostPart = text[..<colon]
            portPart = text[text.index(after: colon)...]
            guard hostPart == "localhost" || Self.ipv4Octets(hostPart) != nil else { throw .badHost(text) }
        }
        guard !portPart.isEmpty, portPart.count <= 5, portPart.allSatisfy({ $0.isASCII && $0.isNumber }),
            let port = Int(portPart), port <= 65535
        else { throw .badPort(text) }
        host = hostPart == "localhost" ? "127.0.0.1" : String(hostPart)
        self.port = port
    }

    /// 127.0.0.0/8 and ::1 (however it is written).
    package var isLoopback: Bool {
        if let octets = Self.ipv4Octets(Substring(host)) { return octets[0] == 127 }
        guard let bytes = Self.ipv6Bytes(host) else { return false }
        return bytes.dropLast().allSatisfy { $0 == 0 } && bytes.last == 1
    }

    package var description: String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    private static func ipv4Octets(_ text: Substring) -> [Int]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var octets: [Int] = []
        for part in parts {
            guard !part.isEmpty, part.count <= 3, part.allSatisfy({ $0.isASCII && $0.isNumber }),
                let value = Int(part), value <= 255
            else { return nil }
            octets.append(value)
        }
        return octets
    }

    /// The 16 bytes of an IPv6 address (inet_pton), or nil.
    private static func ipv6Bytes(_ text: String) -> [UInt8]? {
        guard text.utf8.count <= 45, text.allSatisfy({ $0.isASCII }) else { return nil }
        var address = in6_addr()
        guard inet_pton(AF_INET6, text, &address) == 1 else { return nil }
        return withUnsafeBytes(of: &address) { Array($0) }
    }
}
