extension ConfigValueParser {
    static func mqttURL(_ value: RawConfigValue) throws(ConfigValueProblem) -> String {
        let text = try string(value, expected: "a URL")
        do throws(MqttURL.Problem) {
            _ = try MqttURL(parsing: text)
            return text
        } catch {
            throw ConfigValueProblem(error.reason, at: value)
        }
    }

    static func mqttNode(_ value: RawConfigValue) throws(ConfigValueProblem) -> String {
        let text = try string(value, expected: "a node name")
        if let problem = MqttTopicText.nodeProblem(text) { throw ConfigValueProblem(problem, at: value) }
        return text
    }

    static func mqttTopicPrefix(_ value: RawConfigValue) throws(ConfigValueProblem) -> String {
        let text = try string(value, expected: "a topic prefix")
        if let problem = MqttTopicText.prefixProblem(text) { throw ConfigValueProblem(problem, at: value) }
        return text
    }

    /// `mqtt.client_id`, `mqtt.username`: printable text of at most 256 bytes.
    static func mqttText(_ value: RawConfigValue) throws(ConfigValueProblem) -> String {
        let text = try string(value)
        guard text.utf8.count <= 256 else { throw ConfigValueProblem("is longer than 256 bytes", at: value) }
        return text
    }
}
