import BeacondTestSupport
import Foundation
import Synchronization
import Testing

@testable import BeacondClient
@testable import BeacondCore

/// Issue 16, "every change": a storm of states handed over faster than the pump interval reaches a
/// real broker complete and in order, in batches (one pump per interval, not one per state), and a
/// lone state after a quiet spell goes at once.
@Suite(
    .serialized,
    .enabled(if: MosquittoBroker.available, "mosquitto and mosquitto-clients are missing: `make deps` installs them"))
struct MqttBurstTests {
    final class Received: Sendable {
        let payloads = Mutex<[String]>([])
        let connected = Atomic<Bool>(false)
        let subscribed = Atomic<Bool>(false)
        var count: Int { payloads.withLock { $0.count } }
    }

    static func watcher(_ broker: MosquittoBroker, topic: String, into received: Received) throws -> MosquittoClient {
        var handlers = MosquittoClient.Handlers()
        handlers.connected = { client in
            client.subscribe(topic, qos: 1)
            received.connected.store(true, ordering: .releasing)
        }
        handlers.subscribed = { received.subscribed.store(true, ordering: .releasing) }
        handlers.message = { _, payload, retained in
            guard !retained else { return }
            received.payloads.withLock { $0.append(String(decoding: payload, as: UTF8.self)) }
        }
        let url = try MqttURL(parsing: broker.url)
        return try MosquittoClient(options: .init(url: url, clientID: "burst-watcher-\(getpid())"), handlers: handlers)
    }

    @Test func aStormOfStatesArrivesCompleteInOrderInBatches() throws {
        let broker = try MosquittoBroker()
        let received = Received()
        let watcher = try Self.watcher(broker, topic: "burst/n/state", into: received)
        try watcher.start()
        defer { watcher.stop() }
        #expect(blockingWaitUntil(within: 5, intervalMicros: 10_000) { received.connected.load(ordering: .acquiring) })
        // The subscription is acknowledged after the connection.
        #expect(blockingWaitUntil(within: 5, intervalMicros: 10_000) { received.subscribed.load(ordering: .acquiring) })

        let topics = MqttTopics(prefix: "burst", node: "n")
        let outbox = MqttOutbox(MqttOutboxState(maxStates: 1000))
        let pumps = Atomic<Int>(0)
        var options = MosquittoClient.Options(url: try MqttURL(parsing: broker.url), clientID: "burst-\(getpid())")
        options.pumpInterval = 200_000
        let handlers = MosquittoClient.Handlers.publishing(outbox, topics: topics) { work in
            if !work.isEmpty { pumps.add(1, ordering: .relaxed) }
        }
        let client = try MosquittoClient(options: options, handlers: handlers)
        outbox.setWake { client.wake() }
        try client.start()
        defer { client.stop() }
        #expect(blockingWaitUntil(within: 5, intervalMicros: 10_000) { outbox.status.connected })

        // A lone state goes at once: well inside the pump interval.
        let lone = MonotonicClock.micros()
        outbox.update { $0.offer(state: Array("0".utf8)) }
        #expect(blockingWaitUntil(within: 5, intervalMicros: 1000) { received.count == 1 })
        let loneMicros = MonotonicClock.micros() - lone

        // 300 states in 0.3 s: 1 per ms.
        for n in 1...300 {
            outbox.update { $0.offer(state: Array(String(n).utf8)) }
            usleep(1000)
        }
        #expect(blockingWaitUntil(within: 10, intervalMicros: 10_000) { received.count >= 301 })
        let payloads = received.payloads.withLock { $0 }
        #expect(payloads == (0...300).map(String.init), "\(payloads.count) received")
        #expect(outbox.status.publishedStates == 301)
        #expect(outbox.status.coalescedStates == 0)
        // One pump per 200 ms at most (the storm lasts 0.3 s, more on a loaded machine): far fewer than
        // states.
        let batches = pumps.load(ordering: .relaxed)
        #expect(batches >= 2 && batches <= 20, "\(batches) pumps for 301 states")
        #expect(loneMicros < 150_000, "a lone state took \(loneMicros) µs, the pump interval is 200,000")
    }
}
