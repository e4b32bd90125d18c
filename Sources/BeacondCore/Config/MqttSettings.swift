import Glibc

extension DaemonConfiguration {
    /// The config file's `mqtt` section (docs/mqtt.md): where the venue-wide publisher sends this
    /// node's state, status and sightings. Every key is restart-only.
    package struct Mqtt: Hashable, Sendable {
        package static let defaultTopicPrefix = MqttTopics.defaultPrefix
        package static let defaultQoSState = 1

        /// `mqtt://host:1883` or `mqtts://host:8883`; nil: no MQTT.
        package var url: String?
        /// This node's topic level; nil: the host name (made a valid level).
        package var node: String?
        /// nil: `beacond-<node>`.
        package var clientID: String?
        package var username: String?
        /// A file holding the password (one line; a trailing newline is not part of it).
        package var passwordFile: String?
        /// PEM CA certificates for `mqtts://`; nil: the system's store.
        package var caFile: String?
        package var topicPrefix: String = defaultTopicPrefix
        package var qosState: Int = defaultQoSState

        package init() {}

        /// The node name in use: `node`, else the host name.
        package var resolvedNode: String {
            if let node { return node }
            var buffer = [CChar](repeating: 0, count: 256)
            guard gethostname(&buffer, buffer.count - 1) == 0 else { return "beacond" }
            let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
            return MqttTopicText.nodeName(from: String(decoding: bytes, as: UTF8.self))
        }

        /// The client id in use: `client_id`, else `beacond-<node>`.
        package var resolvedClientID: String { clientID ?? "beacond-" + resolvedNode }
    }

    /// The `mqtt` section's checks that need more than one key.
    func mqttCrossCheck() -> [ConfigurationProblem] {
        var problems: [ConfigurationProblem] = []
        guard let text = mqtt.url else {
            for key in [ConfigKey.mqttNode, .mqttClientID, .mqttUsername, .mqttPasswordFile, .mqttCAFile]
            where origins[key] != nil && describe(key) != "~" {
                problems.append(origins.problem(key, reason: "needs mqtt.url (--mqtt-url)"))
            }
            return problems
        }
        let url = try? MqttURL(parsing: text)
        if mqtt.caFile != nil, url?.isTLS == false {
            problems.append(
                origins.problem(.mqttCAFile, reason: "is for mqtts:// URLs; mqtt.url \(text) is not encrypted"))
        }
        if mqtt.passwordFile != nil, mqtt.username == nil {
            problems.append(origins.problem(.mqttPasswordFile, reason: "needs mqtt.username"))
        }
        return problems
    }
}
