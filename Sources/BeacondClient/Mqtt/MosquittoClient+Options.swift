/// What a `MosquittoClient` is set up with: where and how to connect, and what to do on its thread.
extension MosquittoClient {
    package struct Options: Sendable {
        package var url: MqttURL
        package var clientID: String
        package var username: String?
        package var password: String?
        package var caFile: String?
        package var keepalive: Int32 = 30
        /// After a `pump` that published, the next one waits until this many µs passed: a storm of
        /// hand-overs goes out in batches, each written corked (as few TCP segments as it fills),
        /// while a lone one goes at once.
        package var pumpInterval: Int64 = 0
        /// The last will: sent by the broker when this client vanishes without a clean disconnect.
        package var will: Message?
        /// Published by a clean stop, which waits up to a second for the broker to take it before it
        /// disconnects (if it does not, the dropped connection fires the will).
        package var farewell: Message?
        /// With a value, the client speaks MQTT 5 and its CONNECT asks the broker to send no packet
        /// larger than this many bytes (Maximum Packet Size): the broker drops such a message for this
        /// client instead of sending it, so a huge retained message never reaches its memory.
        package var maximumPacketSize: UInt32?
        /// A message whose payload is larger than this many bytes (one that got through anyway: a
        /// broker that ignores the maximum) is not copied: `oversize` gets its topic and size instead.
        package var maxPayload = Int(Int32.max)
        /// While connected, `periodic` runs every this many µs after the connection; 0: never.
        package var periodicInterval: Int64 = 0

        package init(url: MqttURL, clientID: String) {
            self.url = url
            self.clientID = clientID
        }
    }

    package struct Message: Sendable {
        package var topic: String
        package var payload: [UInt8]
        package var qos: Int32
        package var retain: Bool

        package init(topic: String, payload: [UInt8], qos: Int32, retain: Bool) {
            self.topic = topic
            self.payload = payload
            self.qos = qos
            self.retain = retain
        }
    }

    /// Every handler runs on the network thread, and may call `publish` and `subscribe`.
    package struct Handlers: Sendable {
        /// The broker accepted the connection.
        package var connected: @Sendable (MosquittoClient) -> Void = { _ in }
        /// A connection attempt failed or a connection ended; the reason for the log and status, and
        /// whether it is the same as the previous failure (so the log says it once).
        package var failed: @Sendable (_ reason: String, _ repeated: Bool) -> Void = { _, _ in }
        /// The broker acknowledged a `subscribe` (SUBACK): its retained messages come next.
        package var subscribed: @Sendable () -> Void = {}
        /// One publish written (QoS 0) or acknowledged (QoS 1, 2).
        package var published: @Sendable () -> Void = {}
        package var message: @Sendable (_ topic: String, _ payload: [UInt8], _ retained: Bool) -> Void = { _, _, _ in }
        /// A message over `Options.maxPayload`, not copied: its topic and payload size.
        package var oversize: @Sendable (_ topic: String, _ size: Int) -> Void = { _, _ in }
        /// Every `Options.periodicInterval` while connected.
        package var periodic: @Sendable (MosquittoClient) -> Void = { _ in }
        /// After a `wake()`, while a connection is open (at most once per `Options.pumpInterval`):
        /// publish what other threads handed over; true when it published anything.
        package var pump: @Sendable (MosquittoClient) -> Bool = { _ in false }

        package init() {}
    }
}

extension MosquittoClient.Options {
    /// `mqtt.password_file`: its first line.
    package static func readPassword(_ path: String) throws -> String {
        let bytes: [UInt8]
        do {
            bytes = try readRegularFile(path, maxBytes: 4096)
        } catch {
            throw MosquittoClient.SetupError(description: "mqtt.password_file \(path): \(error)")
        }
        let line = bytes.prefix { $0 != 0x0A && $0 != 0x0D }
        return String(decoding: line, as: UTF8.self)
    }
}
