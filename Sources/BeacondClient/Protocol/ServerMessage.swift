import Foundation

/// Any message of protocol v1 from the daemon, decoded by its `type`. A client ignores types it
/// does not know (`.unknown`) and fields it does not know (docs/protocol.md).
package enum ServerMessage: Hashable, Sendable, Decodable {
    case hello(HelloMessage)
    case state(StateMessage)
    case beacon(BeaconMessage)
    case status(StatusMessage)
    case history(HistoryMessage)
    case subscribed(SubscribedMessage)
    case dropped(DroppedMessage)
    case pong(PongMessage)
    case error(ErrorMessage)
    case bye(ByeMessage)
    /// A type this version does not know.
    case unknown(type: String)

    private enum CodingKeys: String, CodingKey {
        case type
    }

    package init(from decoder: Decoder) throws {
        let type = try decoder.container(keyedBy: CodingKeys.self).decode(String.self, forKey: .type)
        switch type {
        case "hello": self = .hello(try HelloMessage(from: decoder))
        case "state": self = .state(try StateMessage(from: decoder))
        case "beacon": self = .beacon(try BeaconMessage(from: decoder))
        case "status": self = .status(try StatusMessage(from: decoder))
        case "history": self = .history(try HistoryMessage(from: decoder))
        case "subscribed": self = .subscribed(try SubscribedMessage(from: decoder))
        case "dropped": self = .dropped(try DroppedMessage(from: decoder))
        case "pong": self = .pong(try PongMessage(from: decoder))
        case "error": self = .error(try ErrorMessage(from: decoder))
        case "bye": self = .bye(try ByeMessage(from: decoder))
        default: self = .unknown(type: type)
        }
    }

    /// Decodes one line (without its "\n").
    package init(line: [UInt8]) throws {
        self = try JSONDecoder().decode(ServerMessage.self, from: Data(line))
    }
}
