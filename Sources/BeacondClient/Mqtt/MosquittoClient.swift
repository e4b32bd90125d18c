import CMosquitto
import CircuitState
import Glibc
import Synchronization

/// One libmosquitto client on a network thread of its own: connect, run the network loop, and on any
/// failure reconnect after a backoff (0.5 s doubling to 30 s, with jitter). libmosquitto does MQTT;
/// this only drives it.
///
/// The loop is beacond's own poll(2) over the client's socket and a wake eventfd, through
/// libmosquitto's API for other event loops (`mosquitto_loop_read`, `_write`, `_misc`). Other threads
/// never call libmosquitto: they hand work over and call `wake()`, and the `pump` handler publishes it
/// on the network thread, which writes it at once. A publish so costs no second thread's wake-up and
/// none of libmosquitto's socket-pair wake-ups (its threaded mode's).
// @unchecked Sendable: libmosquitto's handle is used on the network thread only; others use its
// atomics and wake signal.
package final class MosquittoClient: @unchecked Sendable {
    package struct SetupError: Error, CustomStringConvertible {
        package let description: String

        package init(description: String) {
            self.description = description
        }
    }

    static let ok = Int32(MOSQ_ERR_SUCCESS.rawValue)

    private let handle: OpaquePointer
    private let options: Options
    private let handlers: Handlers
    private let wakeSignal: WakeSignal
    /// Signalled by the network thread as it ends, for `stop(within:)` to wait on.
    private let endedSignal: WakeSignal
    private var thread: PosixThread?
    /// `options.caFile`'s bytes, which libmosquitto opens by path (`PrivateFileCopy`).
    private var caCopy: PrivateFileCopy?
    /// Set once by `stop()`; read by the network thread.
    private let stopping = Atomic<Bool>(false)
    /// Set by the network thread as it ends.
    private let ended = Atomic<Bool>(false)
    // The network thread only:
    /// The last libmosquitto error log line (OpenSSL's reason for a TLS failure).
    private var lastLogError: String?
    private var lastFailure: String?
    private var backoff = Backoff(floor: 500_000, cap: 30_000_000, jitter: 0.25)
    /// The CONNACK refused this connection (the loop's error then says less).
    private var refusal: String?
    /// The broker accepted the open connection.
    private var isAccepted = false
    /// The farewell's message id while a clean stop waits for the broker to take it.
    private var farewellMid: Int32?

    package init(options: Options, handlers: Handlers) throws(SetupError) {
        _ = Self.libraryInitialised
        do {
            wakeSignal = try WakeSignal()
            endedSignal = try WakeSignal()
        } catch {
            throw SetupError(description: "mqtt: cannot create the wake eventfd: \(errnoText(error.errno))")
        }
        guard let handle = mosquitto_new(options.clientID, true, nil) else {
            throw SetupError(description: "mqtt: cannot create a client: \(errnoText(errno))")
        }
        self.handle = handle
        self.options = options
        self.handlers = handlers
        mosquitto_user_data_set(handle, Unmanaged.passUnretained(self).toOpaque())
        mosquitto_connect_callback_set(handle) { _, object, code in
            guard let object else { return }
            Unmanaged<MosquittoClient>.fromOpaque(object).takeUnretainedValue().connectAnswered(code)
        }
        mosquitto_publish_callback_set(handle) { _, object, mid in
            guard let object else { return }
            Unmanaged<MosquittoClient>.fromOpaque(object).takeUnretainedValue().published(mid: mid)
        }
        mosquitto_subscribe_callback_set(handle) { _, object, _, _, _ in
            guard let object else { return }
            Unmanaged<MosquittoClient>.fromOpaque(object).takeUnretainedValue().handlers.subscribed()
        }
        mosquitto_message_callback_set(handle) { _, object, message in
            guard let object, let message, let topic = message.pointee.topic else { return }
            let client = Unmanaged<MosquittoClient>.fromOpaque(object).takeUnretainedValue()
            let count = Int(max(0, message.pointee.payloadlen))
            guard count <= client.options.maxPayload else {
                client.handlers.oversize(String(cString: topic), count)
                return
            }
            let payload: [UInt8] =
                if let bytes = message.pointee.payload, count > 0 {
                    Array(UnsafeRawBufferPointer(start: bytes, count: count))
                } else { [] }
            client.handlers.message(String(cString: topic), payload, message.pointee.retain)
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
        if options.maximumPacketSize != nil {
            let code = mosquitto_int_option(handle, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V5)
            guard code == Self.ok else { throw SetupError(description: "mqtt: MQTT 5: \(Self.text(code))") }
        }
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
            if let caFile = options.caFile {
                do throws(PrivateFileCopy.Failure) {
                    caCopy = try PrivateFileCopy(of: caFile)
                } catch {
                    throw SetupError(description: "mqtt.ca_file \(error)")
                }
            }
            let capath = caCopy == nil ? "/etc/ssl/certs" : nil
            let code = mosquitto_tls_set(handle, caCopy?.path, capath, nil, nil, nil)
            guard code == Self.ok else {
                throw SetupError(description: "mqtt: TLS setup (mqtt.ca_file): \(Self.text(code))")
            }
        }
    }

    static func text(_ code: Int32) -> String {
        if code == Int32(MOSQ_ERR_ERRNO.rawValue) { return errnoText(errno) }
        return String(cString: mosquitto_strerror(code))
    }

    /// libmosquitto formats every log line (a malloc and a vsnprintf per packet sent or received) once
    /// a log callback is set, so it is set only until the broker accepts the connection: what it is
    /// for, OpenSSL's reason for a failed handshake, comes before that.
    private func captureLog(_ on: Bool) {
        guard on else {
            mosquitto_log_callback_set(handle, nil)
            return
        }
        mosquitto_log_callback_set(handle) { _, object, level, text in
            guard let object, let text, level & (MOSQ_LOG_ERR | MOSQ_LOG_WARNING) != 0 else { return }
            Unmanaged<MosquittoClient>.fromOpaque(object).takeUnretainedValue().lastLogError = String(cString: text)
        }
    }

    // MARK: The network thread

    package func start() throws {
        thread = try BlockingThreadBridge.joinable { [self] in
            runLoop()
            ended.store(true, ordering: .releasing)
            endedSignal.signal()
        }
    }

    private var isStopping: Bool { stopping.load(ordering: .acquiring) }

    /// The thread keeps the default scheduling policy: beacond.service's system call filter refuses
    /// @resources (sched_setscheduler among them), and the daemon asks for nothing it refuses.
    private func runLoop() {
        var first = true
        while !isStopping {
            lastLogError = nil
            refusal = nil
            isAccepted = false
            captureLog(true)
            let code = first || options.maximumPacketSize != nil ? connect() : mosquitto_reconnect(handle)
            first = false
            if code == Self.ok {
                let loopCode = serve()
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

    /// A first connection; with `maximumPacketSize`, every connection (its CONNECT properties are
    /// given each time rather than left to `mosquitto_reconnect`).
    private func connect() -> Int32 {
        let host = options.url.host
        let port = Int32(options.url.port)
        guard let maximum = options.maximumPacketSize else {
            return mosquitto_connect(handle, host, port, options.keepalive)
        }
        var properties: OpaquePointer?
        defer { mosquitto_property_free_all(&properties) }
        let added = mosquitto_property_add_int32(
            &properties, Int32(MQTT_PROP_MAXIMUM_PACKET_SIZE.rawValue), maximum)
        guard added == Self.ok else { return added }
        return mosquitto_connect_bind_v5(handle, host, port, options.keepalive, nil, properties)
    }

    /// Runs one open connection until it fails (the error), or until a stop has said farewell and
    /// disconnected.
    private func serve() -> Int32 {
        var farewellDeadline: Int64?
        var pumpDue = true
        var nextPump: Int64 = 0
        var nextPeriodic = MonotonicClock.micros().addingSaturating(options.periodicInterval)
        while true {
            var timeout: Int32 = 1000
            if isStopping {
                if farewellDeadline == nil {
                    farewellDeadline = MonotonicClock.micros() + 1_000_000
                    sayFarewell()
                }
                if farewellMid == nil || MonotonicClock.micros() >= farewellDeadline ?? 0 {
                    mosquitto_disconnect(handle)
                    return Self.ok
                }
                timeout = 50
            } else if pumpDue {
                let now = MonotonicClock.micros()
                if now >= nextPump {
                    pumpDue = false
                    if pumpCorked() { nextPump = now + options.pumpInterval }
                } else {
                    timeout = Int32(clamping: (nextPump - now + 999) / 1000)
                }
            }
            if options.periodicInterval > 0, isAccepted, !isStopping {
                let now = MonotonicClock.micros()
                if now >= nextPeriodic {
                    handlers.periodic(self)
                    nextPeriodic = now.addingSaturating(options.periodicInterval)
                }
                timeout = min(timeout, Int32(clamping: (nextPeriodic - now + 999) / 1000))
            }
            let socket = mosquitto_socket(handle)
            guard socket >= 0 else { return Int32(MOSQ_ERR_NO_CONN.rawValue) }
            let writing = mosquitto_want_write(handle) ? Int16(POLLOUT) : 0
            // While a pump waits for its turn the wake-ups need not be read.
            var descriptors = (
                pollfd(fd: socket, events: Int16(POLLIN) | writing, revents: 0),
                pollfd(fd: pumpDue ? -1 : wakeSignal.descriptor, events: Int16(POLLIN), revents: 0)
            )
            let ready = withUnsafeMutableBytes(of: &descriptors) { raw in
                poll(raw.baseAddress?.assumingMemoryBound(to: pollfd.self), 2, timeout)
            }
            if ready < 0, errno != EINTR { return Int32(MOSQ_ERR_ERRNO.rawValue) }
            if ready > 0, descriptors.1.revents != 0 {
                wakeSignal.drain()
                pumpDue = true
            }
            let events = ready > 0 ? descriptors.0.revents : 0
            if events & Int16(POLLIN | POLLHUP | POLLERR) != 0 {
                let code = mosquitto_loop_read(handle, 1)
                guard code == Self.ok else { return code }
            }
            if events & Int16(POLLOUT) != 0, mosquitto_socket(handle) >= 0 {
                let code = mosquitto_loop_write(handle, 1)
                guard code == Self.ok else { return code }
            }
            // Keepalive pings and the broker's silence.
            let code = mosquitto_loop_misc(handle)
            guard code == Self.ok else { return code }
        }
    }

    /// Runs `pump` with the socket corked, so its publishes leave in as few TCP segments as they fill.
    private func pumpCorked() -> Bool {
        let socket = mosquitto_socket(handle)
        var on: Int32 = 1
        var off: Int32 = 0
        let corked = socket >= 0 && setsockopt(socket, Int32(IPPROTO_TCP), TCP_CORK, &on, 4) == 0
        let published = handlers.pump(self)
        if corked { _ = setsockopt(socket, Int32(IPPROTO_TCP), TCP_CORK, &off, 4) }
        return published
    }

    private func sayFarewell() {
        farewellMid = nil
        guard isAccepted, let farewell = options.farewell else { return }
        var mid: Int32 = 0
        let code = farewell.payload.withUnsafeBytes { bytes in
            mosquitto_publish(
                handle, &mid, farewell.topic, Int32(bytes.count), bytes.baseAddress, farewell.qos, farewell.retain)
        }
        if code == Self.ok { farewellMid = mid }
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
            isAccepted = true
            captureLog(false)
            handlers.connected(self)
        } else {
            let text = String(cString: mosquitto_connack_string(code))
            refusal = "\(options.url.description) refused the connection: \(text)"
        }
    }

    private func published(mid: Int32) {
        if mid == farewellMid { farewellMid = nil }
        handlers.published()
    }

    private func pause(microseconds: Int64) {
        let deadline = MonotonicClock.micros() + microseconds
        while !isStopping {
            let left = deadline - MonotonicClock.micros()
            guard left > 0 else { return }
            if wakeSignal.wait(micros: left) { wakeSignal.drain() }
        }
    }

    // MARK: Handlers (the network thread)

    /// Hands one publish to libmosquitto, which writes it at once (or when the socket takes it);
    /// false when it refused it (not connected, too large). From a handler only.
    @discardableResult
    package func publish(topic: String, payload: [UInt8], qos: Int32, retain: Bool) -> Bool {
        let code = topic.withCString { topic in
            payload.withUnsafeBytes { bytes in
                mosquitto_publish(handle, nil, topic, Int32(bytes.count), bytes.baseAddress, qos, retain)
            }
        }
        return code == Self.ok
    }

    /// From a handler only.
    @discardableResult
    package func subscribe(_ filter: String, qos: Int32) -> Bool {
        mosquitto_subscribe(handle, nil, filter, qos) == Self.ok
    }

    // MARK: Any thread

    /// Wakes the network thread, which then runs `pump`.
    package func wake() { wakeSignal.signal() }

    /// A clean stop: the network thread publishes the farewell, waits up to a second for the broker to
    /// take it, disconnects (no last will) and ends; this waits for it, at most `within` µs. False when
    /// the thread did not end by then: it is inside a connection attempt (`mosquitto_connect` blocks,
    /// and against a broker that drops SYNs the kernel gives up only after about two minutes), which
    /// is left to end with the process.
    @discardableResult
    package func stop(within timeout: Int64 = 3_000_000) -> Bool {
        stopping.store(true, ordering: .releasing)
        wakeSignal.signal()
        guard let thread else { return true }
        endedSignal.wait(micros: timeout)
        guard ended.load(ordering: .acquiring) else { return false }
        thread.join()
        return true
    }
}
