import AsyncHTTPClient
import Foundation
import NIOCore
import NIOSSL

/// A remote setting that cannot be used: which, and why.
struct RemoteConfigurationError: Error, CustomStringConvertible, Equatable {
    let reason: String
    var description: String { reason }
}

/// Where the venue's circuit state is read from.
enum RemoteEndpoint: Hashable, Sendable, CustomStringConvertible {
    /// `http://` or `https://`: fetched with a GET.
    case http(url: String, secure: Bool)
    /// `file://`: read from disk.
    case file(path: String)

    /// `remote.url`, by `RemoteURL`'s rules (the config file's).
    init(parsing text: String) throws {
        let url: RemoteURL
        do throws(RemoteURL.Problem) {
            url = try RemoteURL(parsing: text)
        } catch {
            throw RemoteConfigurationError(reason: "remote URL: \(error.reason)")
        }
        switch url.target {
        case .http(let secure): self = .http(url: text, secure: secure)
        case .file(let path): self = .file(path: path)
        }
    }

    /// The URL for logs and status, without any user:password part.
    var description: String {
        switch self {
        case .file(let path):
            return "file://" + path
        case .http(let url, _):
            guard var components = URLComponents(string: url), components.user != nil || components.password != nil
            else { return url }
            components.user = nil
            components.password = nil
            return components.string ?? url
        }
    }
}

/// The `remote.*` settings the poller runs with.
struct RemotePollerConfiguration: Hashable, Sendable {
    /// `remote.url`: `http://`, `https://` or `file://`.
    var url: String
    /// `remote.poll_interval`.
    var pollInterval: Duration = .seconds(5)
    /// `remote.timeout`: for the whole fetch, connecting to the last body byte.
    var timeout: Duration = .seconds(3)
    /// `remote.stale_after`: retries after failures come at most a third of it apart.
    var staleAfter: Duration = .seconds(15)
    /// `remote.ca_file`: PEM certificates that are then the only trust roots for `https://`.
    var caFile: String? = nil
    /// `remote.bearer_token_file`: its trimmed content is sent as `Authorization: Bearer <token>`.
    var bearerTokenFile: String? = nil

    /// The longest `remote.bearer_token_file` read.
    static let maxTokenBytes = 8192
    /// The longest `remote.ca_file` read.
    static let maxCAFileBytes = 1 << 20
    /// A body longer than this is an error; reading stops there.
    static let maxBodyBytes = 64 * 1024
    /// Failures back off to at most this many poll intervals (and at most `stale_after / 3`).
    static let backoffCapFactor = 6

    init(
        url: String, pollInterval: Duration = .seconds(5), timeout: Duration = .seconds(3),
        staleAfter: Duration = .seconds(15), caFile: String? = nil, bearerTokenFile: String? = nil
    ) {
        self.url = url
        self.pollInterval = pollInterval
        self.timeout = timeout
        self.staleAfter = staleAfter
        self.caFile = caFile
        self.bearerTokenFile = bearerTokenFile
    }

    /// Checks the settings and reads the files they name: the token, the CA certificates.
    /// Called at start and on reload, so a bad setting is reported before it is used.
    func prepare() throws -> PreparedRemote {
        let endpoint = try RemoteEndpoint(parsing: url)
        guard pollInterval > .zero else { throw RemoteConfigurationError(reason: "remote.poll_interval must be > 0") }
        guard timeout > .zero else { throw RemoteConfigurationError(reason: "remote.timeout must be > 0") }
        guard staleAfter > .zero else { throw RemoteConfigurationError(reason: "remote.stale_after must be > 0") }
        let token = try bearerTokenFile.map(Self.readToken)
        var tls: TLSConfiguration?
        if case .http(_, secure: true) = endpoint {
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.certificateVerification = .fullVerification
            if let caFile {
                let certificates: [NIOSSLCertificate]
                do {
                    let pem = try Self.readSettingFile(caFile, key: "remote.ca_file", maxBytes: Self.maxCAFileBytes)
                    certificates = try NIOSSLCertificate.fromPEMBytes(pem)
                } catch let error as RemoteConfigurationError {
                    throw error
                } catch {
                    throw RemoteConfigurationError(
                        reason: "remote.ca_file \(caFile): cannot load PEM certificates (\(error))")
                }
                guard !certificates.isEmpty else {
                    throw RemoteConfigurationError(reason: "remote.ca_file \(caFile): no certificate in the file")
                }
                // Pinned: these certificates are the only roots; the system store is not consulted.
                configuration.trustRoots = .certificates(certificates)
                configuration.additionalTrustRoots = []
            }
            tls = configuration
        }
        return PreparedRemote(configuration: self, endpoint: endpoint, bearerToken: token, tls: tls)
    }

    /// The bytes of the regular file a setting names, at most `maxBytes`: a FIFO, a device
    /// (`/dev/zero`) or a huge file is refused instead of read without end.
    static func readSettingFile(_ path: String, key: String, maxBytes: Int) throws -> [UInt8] {
        do {
            return try RemoteFetcher.readFile(path, cap: maxBytes)
        } catch let failure as RemoteFailure where failure.kind == .tooLarge {
            throw RemoteConfigurationError(reason: "\(key) \(path): the file is over \(maxBytes) bytes")
        } catch {
            throw RemoteConfigurationError(reason: "\(key): \(error)")
        }
    }

    static func readToken(from path: String) throws -> String {
        let data = Data(try readSettingFile(path, key: "remote.bearer_token_file", maxBytes: maxTokenBytes))
        guard let text = String(data: data, encoding: .utf8) else {
            throw RemoteConfigurationError(
                reason: "remote.bearer_token_file \(path): expected one UTF-8 token of at most 8 KiB")
        }
        let token = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !token.isEmpty else {
            throw RemoteConfigurationError(reason: "remote.bearer_token_file \(path): the file is empty")
        }
        // A header value cannot hold control characters (a newline would inject headers) or non-ASCII.
        guard token.unicodeScalars.allSatisfy({ $0.value >= 0x21 && $0.value < 0x7F }) else {
            throw RemoteConfigurationError(
                reason: "remote.bearer_token_file \(path): the token must be printable ASCII without spaces")
        }
        return token
    }
}

/// A checked configuration with its files read.
struct PreparedRemote: Sendable {
    let configuration: RemotePollerConfiguration
    let endpoint: RemoteEndpoint
    let bearerToken: String?
    /// For `https://`: full verification, against the pinned CA file when one is set.
    let tls: TLSConfiguration?

    func makeHTTPClient(eventLoopGroup: any EventLoopGroup) -> HTTPClient {
        let timeout = TimeAmount.nanoseconds(Self.nanoseconds(configuration.timeout))
        var client = HTTPClient.Configuration(
            tlsConfiguration: tls, redirectConfiguration: .disallow,
            timeout: .init(connect: timeout, read: timeout))
        // The poller has its own backoff: a refused connection fails the fetch at once.
        client.connectionPool.retryConnectionEstablishment = false
        client.httpVersion = .http1Only
        return HTTPClient(eventLoopGroup: eventLoopGroup, configuration: client)
    }

    static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds.multipliedReportingOverflow(by: 1_000_000_000).partialValue + attoseconds / 1_000_000_000
    }
}
