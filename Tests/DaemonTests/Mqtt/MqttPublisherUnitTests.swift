import BLEPayload
import CircuitState
import Foundation
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// Issue 16: topics, sighting keys, payloads, the outbox's coalescing and dropping, the sighting
/// coalescer.
@Suite struct MqttPublisherUnitTests {
    static let address = BluetoothAddress(rawValue: 0xC0_FF_EE_00_00_01)

    // MARK: Topics

    @Test func topicsAndSightingKeys() {
        let topics = MqttTopics(prefix: "georacing", node: "kiosk-7")
        #expect(topics.state == "georacing/kiosk-7/state")
        #expect(topics.status == "georacing/kiosk-7/status")
        #expect(
            topics.beacon(.circuit(zone: 3, address: Self.address)) == "georacing/kiosk-7/beacons/zone-3-C0FFEE000001")
        #expect(
            MqttTopics.sightingKey(.staff(sourceID: 4_000_000_000, address: Self.address))
                == "source-4000000000-C0FFEE000001")
        for key in [
            OverrideKey.circuit(zone: 65535, address: Self.address), .staff(sourceID: 0, address: Self.address),
        ] {
            let topic = topics.beacon(key)
            #expect(!topic.contains(where: { " @+#:".contains($0) }), "\(topic)")
        }
    }

    @Test func venueTopicParsing() {
        #expect(MqttTopics.parse("georacing/a/state", prefix: "georacing")! == ("a", "state"))
        #expect(MqttTopics.parse("site/x/georacing/b.c/status", prefix: "site/x/georacing")! == ("b.c", "status"))
        #expect(MqttTopics.parse("georacing/a/beacons/zone-1-AA", prefix: "georacing") == nil)
        #expect(MqttTopics.parse("georacing//state", prefix: "georacing") == nil)
        #expect(MqttTopics.parse("other/a/state", prefix: "georacing") == nil)
        #expect(MqttTopics.venueFilters(prefix: "p") == ["p/+/state", "p/+/status"])
    }

    @Test func nodeNamesFromHostNames() {
        #expect(MqttTopicText.nodeName(from: "kiosk 1+#/x") == "kiosk-1---x")
        #expect(MqttTopicText.nodeName(from: "") == "beacond")
        #expect(MqttTopicText.nodeName(from: String(repeating: "a", count: 100)).count == 64)
        #expect(MqttTopicText.nodeProblem("kiosk-1") == nil)
        #expect(MqttTopicText.nodeProblem("a/b") != nil)
        #expect(MqttTopicText.nodeProblem("a+") != nil)
        #expect(MqttTopicText.prefixProblem("venue/georacing") == nil)
        #expect(MqttTopicText.prefixProblem("venue//x") != nil)
        #expect(MqttTopicText.prefixProblem("#") != nil)
    }

    // MARK: Payloads

    @Test func statePayloadIsTheStateMessageWithNodeAndRaceControl() throws {
        let message = StateMessage(
            seq: 4, time: WallTime(micros: 1_778_932_800_250_000), mode: "red_flag", source: "remote", zone: 2,
            zoneName: "Pit lane", beacon: nil, remote: nil, scanner: ScannerStatus(backend: "replay", state: .up))
        let part = RaceControlPart(RemoteSnapshot(mode: "RED", lastUpdated: "2026-11-23T04:00:00Z"))
        let payload = MqttPayload.state(message, node: "kiosk-7", raceControl: part)
        let text = String(decoding: payload, as: UTF8.self)
        #expect(text.hasPrefix(#"{"type":"state","node":"kiosk-7","seq":4,"ts":1778932800.250000,"mode":"red_flag""#))
        #expect(text.hasSuffix(#""race_control":{"mode":"red_flag","last_updated":"2026-11-23T04:00:00Z"}}"#))
        let decoded = try JSONDecoder().decode(MqttStateMessage.self, from: Data(payload))
        #expect(decoded.node == "kiosk-7")
        #expect(decoded.seq == 4)
        #expect(decoded.message == message)
        #expect(decoded.raceControl == RaceControlPart(mode: "red_flag", lastUpdated: "2026-11-23T04:00:00Z"))
        let none = MqttPayload.state(message, node: "n", raceControl: nil)
        #expect(String(decoding: none, as: UTF8.self).hasSuffix(#""race_control":null}"#))
        // A node that advertises adds its transmitter (status.beacon without the heartbeat).
        var transmitter = BeaconStatus(backend: "bluez", adapter: "hci1", zone: 8)
        transmitter.state = "silent"
        transmitter.detail = "race control's state is stale"
        let advertising = MqttPayload.state(message, node: "n", raceControl: nil, transmitter: transmitter)
        #expect(
            String(decoding: advertising, as: UTF8.self).hasSuffix(
                #""race_control":null,"transmitter":{"backend":"bluez","adapter":"hci1","zone":8,"state":"silent","#
                    + #""detail":"race control's state is stale","mode":null,"seq":null,"temperature":null,"#
                    + #""frame":null,"frames":0,"restarts":0}}"#))
        #expect(try JSONDecoder().decode(MqttStateMessage.self, from: Data(advertising)).message == message)
        // The socket's own state line, without `node` and `race_control`, is the same JSON otherwise.
        let socket = try #require(JSONSerialization.jsonObject(with: Data(message.line)) as? [String: Any])
        let mqtt = try #require(JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any])
        #expect(Set(mqtt.keys).subtracting(socket.keys) == ["node", "race_control"])
    }

    /// The daemon's payload copies the fields of the line the hub rendered once: byte for byte the
    /// rendered payload. A line not framed as a state line is not copied.
    @Test func statePayloadIsRenderedFromTheStateMessageAndReadBackIntoIt() throws {
        let beacon = BeaconReport(
            key: "zone-2-C0FFEE000001", kind: "circuit", zone: 2, zoneName: "Pit \"lane\"", sourceID: nil,
            address: "C0:FF:EE:00:00:01", mode: "evacuation", rssi: -60, distance: 1.5, sequence: 7, ttl: 30,
            active: true, held: false, contested: false, ttlLeft: 29.75, lastSeen: 0.25, temperature: nil,
            rejected: nil)
        let message = StateMessage(
            seq: 9, time: WallTime(micros: 1_778_932_800_000_001), mode: "evacuation", source: "beacon", zone: 2,
            zoneName: "Pit \"lane\"", beacon: beacon, remote: nil, scanner: ScannerStatus(backend: "hci", state: .up))
        let part = RaceControlPart(mode: "normal", lastUpdated: nil)
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("type"); writer.string("state")
        writer.key("node"); writer.string("k")
        message.renderFields(into: &writer)
        writer.key("race_control"); part.render(into: &writer)
        writer.endObject()
        let payload = MqttPayload.state(message, node: "k", raceControl: part)
        #expect(payload == writer.bytes)
        // Read back: the hub's state message, whole (its beacon too), and what MQTT added.
        let decoded = try JSONDecoder().decode(MqttStateMessage.self, from: Data(payload))
        #expect(decoded.message == message)
        #expect(decoded.node == "k")
        #expect(decoded.raceControl == part)
        #expect(decoded.problems.isEmpty)
    }

    @Test func raceControlKeepsAnUnknownModeAsSent() {
        #expect(RaceControlPart(RemoteSnapshot(mode: "purple")).mode == "purple")
        #expect(RaceControlPart(RemoteSnapshot(globalMode: "SC", mode: "GREEN")).mode == "safety_car")
    }

    // MARK: Outbox

    func sighting(_ n: Int) -> MqttOutboxState.Sighting {
        MqttOutboxState.Sighting(topic: "t/\(n)", payload: [UInt8(n)])
    }

    @Test func statesCoalesceWhileDisconnectedAndTheLatestGoesOnConnect() {
        var outbox = MqttOutboxState()
        outbox.offer(state: [1])
        outbox.offer(state: [2])
        outbox.offer(state: [3])
        #expect(outbox.take().isEmpty)
        #expect(outbox.status.coalescedStates == 2)
        outbox.connected()
        let work = outbox.take()
        #expect(work.states == [[3]])
        outbox.handedOver(states: 1, sightings: 0)
        #expect(outbox.take().isEmpty)
        #expect(outbox.status.publishedStates == 1)
    }

    @Test func theLatestStateIsSentAgainOnEveryReconnect() {
        var outbox = MqttOutboxState()
        outbox.connected()
        outbox.offer(state: [7])
        #expect(outbox.take().states == [[7]])
        outbox.disconnected(reason: "connection lost")
        #expect(outbox.status.lastError == "connection lost")
        #expect(!outbox.status.connected)
        outbox.connected()
        #expect(outbox.status.reconnects == 1)
        #expect(outbox.status.lastError == nil)
        #expect(outbox.take().states == [[7]])
    }

    @Test func sightingsAreDroppedAndCountedWhileDisconnected() {
        var outbox = MqttOutboxState(maxSightings: 2)
        outbox.offer(sighting: sighting(1))
        #expect(outbox.status.droppedSightings == 1)
        outbox.connected()
        for n in 2...5 { outbox.offer(sighting: sighting(n)) }
        #expect(outbox.status.droppedSightings == 3)
        outbox.disconnected(reason: nil)
        #expect(outbox.status.droppedSightings == 5)
        outbox.connected()
        #expect(outbox.take().isEmpty)
        outbox.dropSighting()
        #expect(outbox.status.droppedSightings == 6)
    }

    @Test func inflightPublishesBoundWhatIsTaken() {
        var outbox = MqttOutboxState(maxSightings: 10, maxInflight: 3)
        outbox.connected()
        for n in 1...5 { outbox.offer(sighting: sighting(n)) }
        outbox.offer(state: [9])
        let first = outbox.take()
        #expect(first.states == [[9]])
        #expect(first.sightings.map(\.topic) == ["t/1", "t/2"])
        outbox.handedOver(states: 1, sightings: 2)
        #expect(outbox.take().isEmpty)
        outbox.offer(state: [10])
        #expect(outbox.take().isEmpty)
        outbox.completed()
        let second = outbox.take()
        #expect(second.states == [[10]])
        #expect(second.sightings.isEmpty)
        outbox.handedOver(states: 1, sightings: 0)
        outbox.completed()
        outbox.completed()
        #expect(outbox.take().sightings.map(\.topic) == ["t/3", "t/4"])
    }

    /// The sender is woken only when `take()` has something for it: not for an acknowledgement alone.
    @Test func hasWorkIsWhatTakeWouldReturn() {
        var outbox = MqttOutboxState(maxSightings: 10, maxInflight: 1)
        /// A state offered while the sender cannot take it is no work until `free` lets it: then
        /// it is what `take()` returns, and it is handed over.
        func offerWhileBusy(_ state: UInt8, until free: (inout MqttOutboxState) -> Void) {
            outbox.offer(state: [state])
            #expect(!outbox.hasWork)
            free(&outbox)
            #expect(outbox.hasWork)
            #expect(outbox.take().states == [[state]])
            outbox.handedOver(states: 1, sightings: 0)
        }
        offerWhileBusy(1) { $0.connected() }
        #expect(!outbox.hasWork)
        offerWhileBusy(2) { $0.completed() }
        outbox.completed()
        #expect(!outbox.hasWork)
        #expect(outbox.take().isEmpty)
        outbox.offer(sighting: sighting(1))
        #expect(outbox.hasWork)
    }

    @Test func aRefusedStateIsRequeuedUnlessANewerOneIsQueued() {
        var outbox = MqttOutboxState()
        outbox.connected()
        outbox.offer(state: [1])
        #expect(outbox.take().states == [[1]])
        outbox.requeueLatestState(refused: 0)
        #expect(outbox.take().isEmpty)
        outbox.requeueLatestState(refused: 1)
        #expect(outbox.take().states == [[1]])
        #expect(outbox.status.coalescedStates == 0)
        outbox.offer(state: [2])
        outbox.offer(state: [3])
        #expect(outbox.take().states == [[2], [3]])
        // Both refused: the latest goes again, the other is counted.
        outbox.requeueLatestState(refused: 2)
        #expect(outbox.status.coalescedStates == 1)
        #expect(outbox.take().states == [[3]])
        // Refused while a newer one is queued: it is sent instead, and the refused one is counted.
        outbox.offer(state: [4])
        outbox.requeueLatestState(refused: 1)
        #expect(outbox.status.coalescedStates == 2)
        #expect(outbox.take().states == [[4]])
    }

    /// Connected, a storm's states all go, in order, up to `maxStates` unsent (the oldest then
    /// coalesce); disconnected, only the latest is kept.
    @Test func connectedEveryStateGoesInOrderAndTheQueueIsBounded() {
        var outbox = MqttOutboxState(maxStates: 3)
        outbox.connected()
        outbox.offer(state: [1])
        outbox.offer(state: [2])
        #expect(outbox.take().states == [[1], [2]])
        #expect(outbox.status.coalescedStates == 0)
        for n in UInt8(3)...7 { outbox.offer(state: [n]) }
        #expect(outbox.take().states == [[5], [6], [7]])
        #expect(outbox.status.coalescedStates == 2)
        outbox.offer(state: [8])
        outbox.offer(state: [9])
        outbox.disconnected(reason: nil)
        #expect(outbox.status.coalescedStates == 3)
        outbox.offer(state: [10])
        #expect(outbox.status.coalescedStates == 4)
        outbox.connected()
        #expect(outbox.take().states == [[10]])
    }

    /// The network thread is woken once per batch of work, not per offer, and not for an
    /// acknowledgement that leaves nothing to send; `take()` re-arms the wake-up.
    @Test func theLockedOutboxWakesTheNetworkThreadOncePerBatch() {
        let outbox = MqttOutbox(MqttOutboxState(maxSightings: 10, maxInflight: 5))
        let wakes = LockedBox(0)
        outbox.setWake { wakes.value += 1 }
        outbox.update { $0.offer(state: [1]) }
        #expect(wakes.value == 0)
        outbox.update { $0.connected() }
        #expect(wakes.value == 1)
        outbox.update { $0.offer(state: [2]) }
        outbox.update { $0.offer(sighting: MqttOutboxState.Sighting(topic: "t", payload: [3])) }
        #expect(wakes.value == 1)
        let work = outbox.take()
        #expect(work.states == [[1], [2]])
        #expect(work.sightings.map(\.payload) == [[3]])
        outbox.update { $0.handedOver(states: 2, sightings: 1) }
        outbox.update { $0.completed() }
        #expect(wakes.value == 1)
        outbox.update { $0.offer(state: [4]) }
        #expect(wakes.value == 2)
        #expect(outbox.take().states == [[4]])
        #expect(outbox.take().isEmpty)
    }
}

/// A value shared with a thread in a test; the join orders the accesses.
final class LockedBox<Value>: @unchecked Sendable {
    var value: Value
    init(_ value: Value) { self.value = value }
}
