import AsyncHTTPClient
import Glibc
import Logging
import NIOCore
import NIOPosix
import Synchronization

/// GeoRacing's beacon heartbeat (`beacon.heartbeat_url`, `beacond beacon --heartbeat-url`): every
/// 10 s a `POST` of the fields the Windows beacon sends (`BeaconModels.cs`), so race control's
/// panel lists this beacon beside the Windows ones. HTTPS uses the remote poller's TLS settings
/// (a pinned CA file for a self-signed panel). Failures are counted, shown in the status, and
/// logged at most once per kind and period; they never touch what is advertised.
package final class BeaconHeartbeat: Sendable {
    package struct Configuration: Hashable, Sendable {
        package var url: String
        package var caFile: String?
        /// GeoRacing's `beacon_uid`: the panel's key for this beacon.
        package var uid: String
        /// `has_screen`: 1 for a kiosk (`beacond run`), 0 for a box that only advertises.
        package var hasScreen: Bool
        package var interval: Duration = .seconds(10)
        package var timeout: Duration = .seconds(5)

        package init(url: String, caFile: String?, uid: String, hasScreen: Bool) {
            self.url = url
            self.caFile = caFile
            self.uid = uid
            self.hasScreen = hasScreen
        }
    }

    package let configuration: Configuration
    private let remote: PreparedRemote
    private let transmitter: BeaconTransmitter
    private let logger: Logger
    private let logLimiter: LogRateLimiter
    private let eventLoopGroup: any EventLoopGroup
    private let counters: Mutex<HeartbeatStatus>

    /// - Throws: `RemoteConfigurationError` for a bad URL or CA file.
    package init(
        configuration: Configuration, transmitter: BeaconTransmitter, logger: Logger,
        logLimiter: LogRateLimiter = .shared,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) throws {
        self.configuration = configuration
        remote = try RemotePollerConfiguration(
            url: configuration.url, timeout: configuration.timeout, caFile: configuration.caFile
        ).prepare()
        self.transmitter = transmitter
        self.logger = logger
        self.logLimiter = logLimiter
        self.eventLoopGroup = eventLoopGroup
        counters = Mutex(HeartbeatStatus(url: remote.endpoint.description))
    }

    /// `beacond-HOSTNAME`: the default `beacon_uid`.
    package static func defaultUID() -> String {
        var name = [CChar](repeating: 0, count: 256)
        guard gethostname(&name, name.count - 1) == 0 else { return "beacond" }
        let host = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return host.isEmpty ? "beacond" : "beacond-" + host
    }

    /// `status.beacon.heartbeat`.
    package var status: HeartbeatStatus { counters.withLock { $0 } }

    /// The body GeoRacing's panel reads, from what the transmitter does now: `mode` is the mode
    /// advertised in GeoRacing's words (`RED_FLAG`), or `UNKNOWN` with the reason in `message`
    /// while it advertises nothing.
    package static func body(_ status: BeaconStatus, configuration: Configuration) -> [UInt8] {
        // A frame planned and the radio advertising it, or about to.
        let advertising = status.mode != nil && (status.state == "advertising" || status.state == "starting")
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("beacon_uid"); writer.string(configuration.uid)
        writer.key("name"); writer.string(configuration.uid)
        writer.key("description"); writer.string("beacond \(BeacondVersion.current), zone \(status.zone)")
        writer.key("zone_id"); writer.int(status.zone)
        writer.key("latitude"); writer.int(0)
        writer.key("longitude"); writer.int(0)
        writer.key("has_screen"); writer.int(configuration.hasScreen ? 1 : 0)
        writer.key("mode"); writer.string(advertising ? (status.mode ?? "unknown").uppercased() : "UNKNOWN")
        writer.key("arrow_direction"); writer.string("NONE")
        writer.key("message"); writer.string(advertising ? "" : status.detail ?? "")
        writer.endObject()
        return writer.bytes
    }

    /// Sends one heartbeat, then one every `interval`, until cancelled.
    package func run() async {
        let client = remote.makeHTTPClient(eventLoopGroup: eventLoopGroup)
        let loop = eventLoopGroup.next()
        while !Task.isCancelled {
            await send(client: client)
            do {
                try await loop.wait(for: configuration.interval)
            } catch {
                break
            }
        }
        try? await client.shutdown()
    }

    private func send(client: HTTPClient) async {
        var request = HTTPClientRequest(url: configuration.url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: "beacond/\(BeacondVersion.current)")
        request.body = .bytes(ByteBuffer(bytes: Self.body(transmitter.status, configuration: configuration)))
        let deadline = NIODeadline.now() + .nanoseconds(PreparedRemote.nanoseconds(configuration.timeout))
        do {
            let response = try await client.execute(request, deadline: deadline)
            guard (200..<300).contains(response.status.code) else {
                throw RemoteFailure(kind: .httpStatus, reason: "HTTP \(response.status.code)")
            }
            counters.withLock { $0.sent += 1 }
        } catch {
            let failure = RemoteFailure.classify(error, timeout: configuration.timeout)
            counters.withLock {
                $0.failed += 1
                $0.lastError = failure.reason
            }
            logger.limited(
                limiter: logLimiter, .warning, "beacon.heartbeat.\(failure.kind.rawValue)",
                "beacon heartbeat to \(remote.endpoint) failed: \(TerminalText.logged(failure.reason))")
        }
    }
}
