import CMosquitto
import Glibc
import Synchronization

/// One libmosquitto client with its own network thread: connect, run the loop, and on any failure
/// reconnect after a backoff (0.5 s doubling to 30 s, with jitter). libmosquitto does MQTT; this
/// only drives it. Callbacks run on the network thread.
///
/// Threaded mode is on, so `publish` and `subscribe` may be called from any thread: libmosquitto
/// queues the packet and wakes the loop.
package final class MosquittoClient: @unchecked Sendable {
    package struct Options: Sendable {
        package var url: MqttURL
        package var clientID: String
        package var username: String?
        package var password: String?
        package var caFile: String?
        package var keepalive: Int32 = 30
        /// The last will: sent by the broker when this client vanishes without a clean disconnect.
        package var will: (topic: String, payload: [UInt8], qos: Int32, retain: Bool)?

        package init(url: MqttURL, clientID: String) {
            self.url = url
            self.clientID = clientID
        }
    }

    package struct Handlers: Sendable {
        /// The broker accepted the connection (on the network thread).
        package var connected: @Sendable (MosquittoClient) -> Void = { _ in }
        /// A connection attempt failed or a connection ended; the reason for the log and status, and
        /// whether it is the same as the previous failure (so the log says it once).
        package var failed: @Sendable (_ reason: String, _ repeated: Bool) -> Void = { _, _ in }
        /// One publish written (QoS 0) or acknowledged (QoS 1, 2).
        package var published: @Sendable () -> Void = {}
        package var message: @Sendable (_ topic: String, _ payload: [UInt8], _ retained: Bool) -> Void = { _, _, _ in }

        package init() {}
    }

    package struct SetupError: Error, CustomStringConvertible {
        package let description: String
    }

    static let ok = Int32(MOSQ_ERR_SUCCESS.rawValue)

    private let handle: OpaquePointer
    private let options: Options
    private let handlers: Handlers
    private var thread: PosixThread?
    /// Set once by `stop()`; read by the network thread.
    private let stopping = Atomic<Bool>(false)
    /// Network thread only: the last libmosquitto error log line (OpenSSL's reason for a TLS failure).
    private var lastLogError: String?
    private var lastFailure: String?
    private var backoff = Backoff(floor: 500_000, cap: 30_000_000, jitter: 0.25)
    /// Network thread only: the CONNACK refused this connection (the loop's error then says less).
    private var refusal: String?

    package init(options: Options, handlers: Handlers) throws(SetupError) {
        _ = Self.libraryInitialised
        guard let handle = mosquitto_new(options.clientID, true, nil) else {
            throw SetupError(description: "mqtt: cannot create a client: \(errnoText(errno))")
        }
        self.handle = handle
        self.options = options
        self.handlers = handlers
        mosquitto_user_data_set(handle, Unmanaged.passUnretained(self).toOpaque())
        mosquitto_threaded_set(handle, true)
        mosquitto_connect_callback_set(handle) { _, object, code in
            guard let object else { return }
            Unmanaged<MosquittoClient>.fromOpaque(object).takeUnretainedValue().connectAnswered(code)
        }
        mosquitto_publish_callback_set(handle) { _, object, _ in
            guard let object else { return }
            Unmanaged<MosquittoClient>.fromOpaque(object).takeUnretainedValue().handlers.published()
        }
        mosquitto_log_callback_set(handle) { _, object, level, text in
            guard let object, let text, level & (MOSQ_LOG_ERR | MOSQ_LOG_WARNING) != 0 else { return }
            Unmanaged<MosquittoClient>.fromOpaque(object).takeUnretainedValue().lastLogError = String(cString: text)
        }
        mosquitto_message_callback_set(handle) { _, object, message in
            guard let object, let message, let topic = message.pointee.topic else { return }
            let count = Int(max(0, message.pointee.payloadlen))
            let payload: [UInt8] =
                if let bytes = message.pointee.payload, count > 0 {
                    Array(UnsafeRawBufferPointer(start: bytes, count: count))
                } else { [] }
            Unmanaged<MosquittoClient>.fromOpaque(object).takeUnretainedValue().handlers.message(
                String(cString: topic), payload, message.pointee.retain)
        }
        try configure()
    }

    deinit {
        mosquitto_destroy(handle)
    }

    private static let libraryInitialised: Bool = {
        mosquitto_lib_init()
        return true
    }()

    private func configure() throws(SetupError) {
        if let will = options.will {
            let code = will.payload.withUnsafeBytes { bytes in
                mosquitto_will_set(handle, will.topic, Int32(bytes.count), bytes.baseAddress, will.qos, will.retain)
            }
            guard code == Self.ok else { throw SetupError(description: "mqtt: last will: \(Self.text(code))") }
        }
        if let username = options.username {
            let code = mosquitto_username_pw_set(handle, username, options.password)
            guard code == Self.ok else { throw SetupError(description: "mqtt: credentials: \(Self.text(code))") }
        }
        if options.url.isTLS {
            let capath = options.caFile == nil ? "/etc/ssl/certs" : nil
            let code = mosquitto_tls_set(handle, options.caFile, capath, nil, nil, nil)
            guard code == Self.ok else {
                throw SetupError(description: "mqtt: TLS setup (mqtt.ca_file): \(Self.text(code))")
            }
        }
    }

    static func text(_ code: Int32) -> String {
        if code == Int32(MOSQ_ERR_ERRNO.rawValue) { return errnoText(errno) }
        return String(cString: mosquitto_strerror(code))
    }

    // MARK: The network thread

    package func start() throws {
        thread = try PosixThread.start(detached: false) { [self] in runLoop() }
    }

    private var isStopping: Bool { stopping.load(ordering: .acquiring) }

    private func runLoop() {
        var first = true
        while !isStopping {
            lastLogError = nil
            refusal = nil
            let host = options.url.host
            let code =
                first
                ? mosquitto_connect(handle, host, Int32(options.url.port), options.keepalive)
                : mosquitto_reconnect(handle)
            first = false
            if code == Self.ok {
                var loopCode = Self.ok
                while !isStopping, loopCode == Self.ok { loopCode = mosquitto_loop(handle, 1000, 1) }
                if isStopping { break }
                // A TLS failure is the same failure whether it ends the connect or the first loop pass:
                // one wording, so the log says it once.
                let isTLS = loopCode == Int32(MOSQ_ERR_TLS.rawValue)
                let lost = isTLS ? describe(loopCode) : "connection lost: \(describe(loopCode))"
                report(failure: refusal ?? lost)
            } else {
                report(failure: describe(code))
            }
            pause(microseconds: backoff.failed(random: Double.random(in: 0..<1)))
        }
    }

    /// A libmosquitto error with what its log said (a TLS failure's OpenSSL reason).
    private func describe(_ code: Int32) -> String {
        let target = options.url.description
        if code == Int32(MOSQ_ERR_TLS.rawValue) {
            let detail = lastLogError.map { ": \($0)" } ?? ""
            return "TLS handshake with \(target) failed\(detail) (check mqtt.ca_file)"
        }
        return "\(target): \(Self.text(code))"
    }

    private func report(failure reason: String) {
        let repeated = reason == lastFailure
        lastFailure = reason
        handlers.failed(reason, repeated)
    }

    private func connectAnswered(_ code: Int32) {
        if code == 0 {
            backoff.succeeded()
            lastFailure = nil
            handlers.connected(self)
        } else {
            let text = String(cString: mosquitto_connack_string(code))
            refusal = "\(options.url.description) refused the connection: \(text)"
        }
    }

    private func pause(microseconds: Int64) {
        var left = microseconds
        while left > 0, !isStopping {
            let step = min(left, 100_000)
            usleep(UInt32(step))
            left -= step
        }
    }

    // MARK: Any thread

    /// Hands one publish to libmosquitto; false when it refused it (not connected, too large).
    @discardableResult
    package func publish(topic: String, payload: [UInt8], qos: Int32, retain: Bool) -> Bool {
        let code = payload.withUnsafeBytes { bytes in
            mosquitto_publish(handle, nil, topic, Int32(bytes.count), bytes.baseAddress, qos, retain)
        }
        return code == Self.ok
    }

    @discardableResult
    package func subscribe(_ filter: String, qos: Int32) -> Bool {
        mosquitto_subscribe(handle, nil, filter, qos) == Self.ok
    }

    /// Disconnects cleanly (no last will) and ends the network thread, waiting for it: at most one
    /// loop pass (1 s) or one connection attempt.
    package func stop() {
        stopping.store(true, ordering: .releasing)
        mosquitto_disconnect(handle)
        thread?.join()
    }
}
