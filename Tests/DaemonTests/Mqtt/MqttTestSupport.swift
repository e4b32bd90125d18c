@testable import BeacondClient
@testable import BeacondCore

extension MosquittoClient.Handlers {
    /// The handlers `MqttPublisher` sets, over `outbox` alone: the connection's state and the
    /// completed publishes go into it, and each pump publishes what it holds (`pumped` hears each
    /// batch first).
    static func publishing(
        _ outbox: MqttOutbox, topics: MqttTopics, pumped: @escaping @Sendable (MqttOutboxState.Work) -> Void = { _ in }
    ) -> Self {
        var handlers = Self()
        handlers.connected = { _ in outbox.update { $0.connected() } }
        handlers.failed = { reason, _ in outbox.update { $0.disconnected(reason: reason) } }
        handlers.published = { outbox.update { $0.completed() } }
        handlers.pump = { client in
            let work = outbox.take()
            pumped(work)
            return MqttPublisher.publish(work, with: client, topics: topics, qos: 1, outbox: outbox)
        }
        return handlers
    }
}
