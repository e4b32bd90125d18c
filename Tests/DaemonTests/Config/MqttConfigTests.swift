import Foundation
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// Issue 16: the `mqtt` section and the `--mqtt-url` / `--mqtt-node` flags.
@Suite struct MqttConfigTests {
    @Test func defaults() {
        let mqtt = DaemonConfiguration().mqtt
        #expect(mqtt.url == nil)
        #expect(mqtt.topicPrefix == "georacing")
        #expect(mqtt.qosState == 1)
        #expect(!mqtt.resolvedNode.isEmpty)
        #expect(MqttTopicText.nodeProblem(mqtt.resolvedNode) == nil)
        #expect(mqtt.resolvedClientID == "beacond-" + mqtt.resolvedNode)
    }

    @Test func theSectionLoads() throws {
        let scratch = ConfigScratch()
        let password = scratch.write("password", "s3cret\n")
        let ca = scratch.write("ca.pem", "x")
        let configuration = try scratch.load(
            """
            mqtt:
              url: mqtts://broker.venue:8884
              node: kiosk-7
              client_id: kiosk-7-main
              username: beacond
              password_file: password
              ca_file: ca.pem
              topic_prefix: venue/georacing
              qos_state: 2
            """)
        let mqtt = configuration.mqtt
        #expect(mqtt.url == "mqtts://broker.venue:8884")
        #expect(mqtt.resolvedNode == "kiosk-7")
        #expect(mqtt.resolvedClientID == "kiosk-7-main")
        #expect(mqtt.passwordFile == password)
        #expect(mqtt.caFile == ca)
        #expect(mqtt.topicPrefix == "venue/georacing")
        #expect(mqtt.qosState == 2)
        #expect(try MosquittoClient.Options.readPassword(password) == "s3cret")
    }

    @Test(arguments: [
        ("mqtt://broker", "broker", 1883, false),
        ("mqtts://broker", "broker", 8883, true),
        ("MQTT://10.0.0.2:1884/", "10.0.0.2", 1884, false),
        ("mqtt://[::1]:1999", "::1", 1999, false),
    ])
    func goodURLs(text: String, host: String, port: Int, tls: Bool) throws {
        let url = try MqttURL(parsing: text)
        #expect(url.host == host)
        #expect(url.port == port)
        #expect(url.isTLS == tls)
    }

    @Test(arguments: [
        ("http://broker", "unsupported URL scheme \"http\" (expected mqtt or mqtts)"),
        ("broker:1883", "is not a URL"),
        ("mqtt://", "has no host"),
        ("mqtt://broker:0", "has a bad port"),
        ("mqtt://broker:70000", "has a bad port"),
        ("mqtt://broker/topic", "has a path"),
        ("mqtt://user:pw@broker", "use mqtt.username and mqtt.password_file"),
    ])
    func badURLs(text: String, reason: String) {
        #expect(throws: MqttURL.Problem.self) { try MqttURL(parsing: text) }
        do {
            _ = try MqttURL(parsing: text)
        } catch {
            #expect(error.reason.contains(reason), "\(error.reason)")
        }
    }

    @Test func badValuesAreReportedWithTheirPlace() {
        let scratch = ConfigScratch()
        let problems = scratch.problems(
            """
            mqtt:
              url: mqtt://broker:99999
              node: "kiosk 7"
              topic_prefix: "georacing/#"
              qos_state: 3
            """)
        #expect(problems.map(\.key) == ["mqtt.url", "mqtt.node", "mqtt.topic_prefix", "mqtt.qos_state"])
        #expect(problems.map(\.line) == [2, 3, 4, 5])
        #expect(problems[3].reason == "must be between 0 and 2, found 3")
    }

    @Test func crossChecks() {
        let scratch = ConfigScratch()
        let ca = scratch.write("ca.pem", "x")
        let password = scratch.write("pw", "x")
        let tlsProblems = scratch.problems("mqtt:\n  url: mqtt://broker\n  ca_file: \(ca)\n")
        #expect(tlsProblems.map(\.key) == ["mqtt.ca_file"])
        #expect(tlsProblems.first?.reason.contains("is for mqtts:// URLs") == true)
        let authProblems = scratch.problems("mqtt:\n  url: mqtt://broker\n  password_file: \(password)\n")
        #expect(authProblems.map(\.key) == ["mqtt.password_file"])
        #expect(authProblems.first?.reason == "needs mqtt.username")
        let noURL = scratch.problems("mqtt:\n  node: kiosk\n")
        #expect(noURL.map(\.key) == ["mqtt.node"])
        #expect(noURL.first?.reason == "needs mqtt.url (--mqtt-url)")
    }

    @Test func flagsOverrideTheFile() throws {
        let scratch = ConfigScratch()
        var overrides = DaemonOverrides()
        overrides[.mqttURL] = "mqtt://127.0.0.1:1999"
        overrides[.mqttNode] = "east-stand"
        let configuration = try scratch.load("mqtt:\n  url: mqtt://other\n  node: west\n", overrides: overrides)
        #expect(configuration.mqtt.url == "mqtt://127.0.0.1:1999")
        #expect(configuration.mqtt.node == "east-stand")
        var bad = DaemonOverrides()
        bad[.mqttNode] = "a/b"
        do {
            _ = try bad.applied(to: DaemonConfiguration())
            Issue.record("a node with a slash was accepted")
        } catch {
            #expect(error.exitCode == 64)
            #expect(error.description.hasPrefix("--mqtt-node (mqtt.node): "))
        }
    }

    @Test func everyMqttKeyIsRestartOnly() {
        for key in ConfigKey.allCases where key.rawValue.hasPrefix("mqtt.") {
            #expect(!key.isLiveReloadable, "\(key.rawValue)")
        }
    }
}
