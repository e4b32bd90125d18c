/// `{"type":"hello","protocol":1,"version":"0.1.0"}`: the first line on every connection.
package struct HelloMessage: Hashable, Sendable, Decodable, RenderedMessage {
    package var protocolVersion: Int
    package var version: String

    package init(protocolVersion: Int = ProtocolVersion.current, version: String = BeacondVersion.current) {
        self.protocolVersion = protocolVersion
        self.version = version
    }

    enum CodingKeys: String, CodingKey {
        case protocolVersion = "protocol"
        case version
    }

    package func render(into writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("type"); writer.string("hello")
        writer.key("protocol"); writer.int(protocolVersion)
        writer.key("version"); writer.string(version)
        writer.endObject()
    }
}

/// `{"type":"pong"}`: the answer to `ping`.
package struct PongMessage: Hashable, Sendable, Decodable, RenderedMessage {
    package init() {}

    package func render(into writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("type"); writer.string("pong")
        writer.endObject()
    }
}

/// `{"type":"bye","reason":…}`: the last line on a connection the daemon closes.
package struct ByeMessage: Hashable, Sendable, Decodable, RenderedMessage {
    package var reason: String

    package init(reason: String) {
        self.reason = reason
    }

    package func render(into writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("type"); writer.string("bye")
        writer.key("reason"); writer.string(reason)
        writer.endObject()
    }
}

/// `{"type":"error","error":…}`: a line that is not a valid command, or a refused connection.
package struct ErrorMessage: Hashable, Sendable, Decodable, RenderedMessage {
    package var error: String

    package init(_ error: String) {
        self.error = error
    }

    package func render(into writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("type"); writer.string("error")
        writer.key("error"); writer.string(error)
        writer.endObject()
    }
}

/// `{"type":"subscribed","beacons":true}`: the answer to `subscribe`.
package struct SubscribedMessage: Hashable, Sendable, Decodable, RenderedMessage {
    package var beacons: Bool

    package init(beacons: Bool) {
        self.beacons = beacons
    }

    package func render(into writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("type"); writer.string("subscribed")
        writer.key("beacons"); writer.bool(beacons)
        writer.endObject()
    }
}

/// `{"type":"dropped","count":n}`: `count` beacon updates were not delivered to a slow client.
package struct DroppedMessage: Hashable, Sendable, Decodable, RenderedMessage {
    package var count: Int

    package init(count: Int) {
        self.count = count
    }

    package func render(into writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("type"); writer.string("dropped")
        writer.key("count"); writer.int(count)
        writer.endObject()
    }
}
