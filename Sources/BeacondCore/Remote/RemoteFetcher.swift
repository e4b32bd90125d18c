import AsyncHTTPClient
import CircuitState
import Foundation
import Glibc
import NIOCore

/// One fetch of the venue's circuit state: a GET, or a file read for `file://`.
enum RemoteFetcher {
    /// Fetches and parses once. Throws `CancellationError` when the task is cancelled; every
    /// other failure comes back as a `RemoteFailure`.
    static func fetch(_ remote: PreparedRemote, client: HTTPClient?) async throws -> Result<
        RemoteSnapshot, RemoteFailure
    > {
        let timeout = remote.configuration.timeout
        do {
            let body: [UInt8]
            switch remote.endpoint {
            case .file(let path):
                body = try readFile(path)
            case .http(let url, _):
                guard let client else { throw RemoteFailure(kind: .transport, reason: "no HTTP client") }
                body = try await withTimeout(timeout, on: client.eventLoopGroup.next()) {
                    try await get(url, token: remote.bearerToken, client: client, timeout: timeout)
                }
            }
            return .success(try RemoteStateDocument.snapshot(fromBody: Data(body)))
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            if Task.isCancelled { throw CancellationError() }
            return .failure(RemoteFailure.classify(error, timeout: timeout))
        }
    }

    /// GET `url`; the body of a 2xx response, read up to the cap.
    static func get(_ url: String, token: String?, client: HTTPClient, timeout: Duration) async throws -> [UInt8] {
        var request = HTTPClientRequest(url: url)
        request.headers.add(name: "Accept", value: "application/json")
        request.headers.add(name: "User-Agent", value: "beacond/\(BeacondVersion.current)")
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        let deadline = NIODeadline.now() + .nanoseconds(PreparedRemote.nanoseconds(timeout))
        let response = try await client.execute(request, deadline: deadline)
        guard (200..<300).contains(response.status.code) else {
            // The body is not read: dropping the response closes the connection.
            throw RemoteFailure(kind: .httpStatus, reason: "HTTP \(response.status.code)")
        }
        let cap = RemotePollerConfiguration.maxBodyBytes
        if let header = response.headers.first(name: "Content-Length"), try contentLength(header) > cap {
            throw RemoteFailure.tooLarge()
        }
        var body: [UInt8] = []
        for try await chunk in response.body {
            // Stop at the cap: leaving the loop drops the stream, which cancels the request.
            guard body.count + chunk.readableBytes <= cap else { throw RemoteFailure.tooLarge() }
            body.append(contentsOf: chunk.readableBytesView)
        }
        return body
    }

    /// A `Content-Length` value: decimal digits only (no sign, no spaces); one too long for an
    /// `Int` is over any cap. Anything else is a transport failure.
    static func contentLength(_ header: String) throws -> Int {
        let digits = header.utf8
        guard !digits.isEmpty, digits.allSatisfy({ (0x30...0x39).contains($0) }) else {
            throw RemoteFailure(
                kind: .transport,
                reason: "invalid Content-Length \"\(TerminalText.escaped(String(header.prefix(32))))\"")
        }
        return Int(header) ?? .max
    }

    /// Reads a regular file, at most `cap` bytes (a FIFO or a device such as `/dev/zero` is refused).
    static func readFile(_ path: String, cap: Int = RemotePollerConfiguration.maxBodyBytes) throws -> [UInt8] {
        do {
            return try readRegularFile(path, maxBytes: cap)
        } catch .open(let code), .stat(let code), .read(let code) {
            throw fileFailure(path, code)
        } catch .notRegular(let kind) {
            throw RemoteFailure(kind: .file, reason: "\(path) \(BoundedFileError.notRegular(kind))")
        } catch .tooLarge {
            throw RemoteFailure.tooLarge()
        }
    }

    private static func fileFailure(_ path: String, _ code: Int32) -> RemoteFailure {
        RemoteFailure(kind: .file, reason: "cannot read \(path): \(errnoText(code))")
    }

    /// Runs `operation`, cancelling it and throwing a timeout failure when it takes longer than `timeout`.
    static func withTimeout<T: Sendable>(
        _ timeout: Duration, on loop: any EventLoop, _ operation: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await operation() }
            group.addTask {
                try await loop.wait(for: timeout)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let value = first else {
                throw RemoteFailure.timedOut(after: timeout)
            }
            return value
        }
    }
}
