import BeacondTestSupport
import Foundation
import Synchronization
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// Issue 25, item 6: a node publishes its latest retained state again periodically, with a new `sent`,
/// so a forged or stale copy on the broker lives at most that long. The republish is not a change: it
/// counts as no published state and keeps the order of real ones.
@Suite(
    .serialized,
    .enabled(if: MosquittoBroker.available, "mosquitto and mosquitto-clients are missing: `make deps` installs them"))
struct MqttRepublishTests {
    @Test func stampedPayloadsCarryTheRunAndWhenTheyWereSent() throws {
        let message = StateMessage(
            seq: 4, time: WallTime(micros: 1_778_932_800_250_000), mode: "red_flag", source: "remote", zone: 2,
            beacon: nil, remote: nil, scanner: ScannerStatus(backend: "replay", state: .up))
        let run = MqttPayload.newRunID()
        #expect(run.count == 16 && run.allSatisfy(\.isHexDigit))
        #expect(MqttPayload.newRunID() != run)
        let payload = MqttPayload.state(message, node: "kiosk-7", run: run, raceControl: nil)
        let stamped = MqttPayload.stamped(payload, sentMicros: 1_778_932_830_000_001)
        let text = String(decoding: stamped, as: UTF8.self)
        #expect(text.hasSuffix(#","run":"\#(run)","race_control":null,"sent":1778932830.000001}"#))
        let decoded = try JSONDecoder().decode(MqttStateMessage.self, from: Data(stamped))
        #expect(decoded.run == run)
        #expect(decoded.sent?.micros == 1_778_932_830_000_001)
        #expect(decoded.problems.isEmpty)
        // Not a JSON object: sent as it is.
        #expect(MqttPayload.stamped(Array("7".utf8), sentMicros: 1) == Array("7".utf8))
    }

    @Test func theOutboxHandsTheLatestStateForARepublishOnlyWhenNothingNewerWaits() {
        var state = MqttOutboxState(maxInflight: 2)
        #expect(state.takeRepublish() == nil)
        state.connected()
        #expect(state.takeRepublish() == nil)
        state.offer(state: [1])
        #expect(state.takeRepublish() == nil)
        let work = state.take()
        state.handedOver(states: work.states.count, sightings: 0)
        #expect(state.takeRepublish() == [1])
        #expect(state.takeRepublish() == nil)
        state.completed()
        state.completed()
        #expect(state.takeRepublish() == [1])
        state.republishRefused()
        #expect(state.status.publishedStates == 1)
        #expect(state.status.coalescedStates == 0)
    }

    @Test func aRealBrokerGetsTheLatestStateAgainWithANewSentEveryInterval() throws {
        let broker = try MosquittoBroker()
        let received = MqttBurstTests.Received()
        let watcher = try MqttBurstTests.watcher(broker, topic: "rp/n/state", into: received)
        try watcher.start()
        defer { watcher.stop() }
        #expect(blockingWaitUntil(within: 5, intervalMicros: 10_000) { received.connected.load(ordering: .acquiring) })
        usleep(200_000)

        let topics = MqttTopics(prefix: "rp", node: "n")
        let outbox = MqttOutbox()
        var options = MosquittoClient.Options(url: try MqttURL(parsing: broker.url), clientID: "rp-\(getpid())")
        options.periodicInterval = 300_000
        var handlers = MosquittoClient.Handlers.publishing(outbox, topics: topics)
        handlers.periodic = { client in MqttPublisher.republish(with: client, topics: topics, qos: 1, outbox: outbox) }
        let client = try MosquittoClient(options: options, handlers: handlers)
        outbox.setWake { client.wake() }
        try client.start()
        defer { client.stop() }
        #expect(blockingWaitUntil(within: 5, intervalMicros: 10_000) { outbox.status.connected })
        outbox.update { $0.offer(state: Array(#"{"seq":1}"#.utf8)) }
        #expect(blockingWaitUntil(within: 10, intervalMicros: 10_000) { received.count >= 4 })
        let payloads = received.payloads.withLock { $0 }
        let sent = payloads.compactMap { text -> Double? in
            let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
            #expect(object?["seq"] as? Int == 1)
            return object?["sent"] as? Double
        }
        #expect(sent.count == payloads.count)
        #expect(sent == sent.sorted() && Set(sent).count == sent.count, "\(sent)")
        #expect(outbox.status.publishedStates == 1)
        #expect(outbox.status.coalescedStates == 0)
    }
}
