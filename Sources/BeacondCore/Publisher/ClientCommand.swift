import Foundation
import NIOCore

/// A client's request, parsed from one line (docs/protocol.md, "Client commands").
enum ClientRequest: Equatable {
    case status
    case ping
    case subscribe(beacons: Bool)
    /// A line that is not a valid command: answered with `{"type":"error","error":reason}`.
    case invalid(reason: String)

    /// The maximum number of bytes of an unknown command name echoed back in an error.
    static let echoLimit = 64

    /// Parses one line (without its "\n"). Nil for a blank line, which is ignored.
    static func parse(_ line: ByteBuffer) -> ClientRequest? {
        let bytes = line.readableBytesView
        guard bytes.contains(where: { !isJSONWhitespace($0) }) else { return nil }
        if let offset = invalidUTF8Offset(bytes) {
            return .invalid(reason: "line is not valid UTF-8 (at byte \(offset))")
        }
        // JSON allows no raw control character, in a string or out of one (tab and CR are whitespace).
        if let index = bytes.firstIndex(where: { $0 < 0x20 && $0 != 0x09 && $0 != 0x0D }) {
            let byte = bytes[index]
            let hex = (byte < 0x10 ? "0" : "") + String(byte, radix: 16, uppercase: true)
            return .invalid(reason: "control character 0x\(hex) at byte \(index - bytes.startIndex)")
        }
        let fields: CommandFields
        do {
            fields = try JSONDecoder().decode(CommandFields.self, from: Data(bytes))
        } catch let error as CommandFields.FieldError {
            return .invalid(reason: error.reason)
        } catch DecodingError.typeMismatch(_, let context) where context.codingPath.isEmpty {
            return .invalid(reason: "expected a JSON object")
        } catch {
            return .invalid(reason: "invalid JSON")
        }
        switch fields.cmd {
        case "status": return .status
        case "ping": return .ping
        case "subscribe": return .subscribe(beacons: fields.beacons ?? true)
        case let name:
            var shown = String(decoding: name.utf8.prefix(echoLimit), as: UTF8.self)
            if name.utf8.count > echoLimit { shown += "…" }
            return .invalid(reason: "unknown command \"\(shown)\" (expected status, subscribe or ping)")
        }
    }

    /// The offset of the first byte that does not start a valid UTF-8 sequence; nil when all is valid.
    private static func invalidUTF8Offset(_ bytes: ByteBufferView) -> Int? {
        var iterator = bytes.makeIterator()
        var decoder = UTF8()
        var offset = 0
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar): offset += UTF8.width(scalar)
            case .emptyInput: return nil
            case .error: return offset
            }
        }
    }

    private static func isJSONWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }
}

/// The fields of a command object. Unknown fields are ignored (for forward compatibility);
/// known ones must have the right type.
private struct CommandFields: Decodable {
    var cmd: String
    var beacons: Bool?

    struct FieldError: Error {
        let reason: String
    }

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        let cmdKey = Key(stringValue: "cmd")
        guard container.contains(cmdKey) else { throw FieldError(reason: "missing \"cmd\"") }
        do {
            cmd = try container.decode(String.self, forKey: cmdKey)
        } catch DecodingError.typeMismatch, DecodingError.valueNotFound {
            throw FieldError(reason: "\"cmd\" must be a string")
        } catch {
            throw FieldError(reason: "\"cmd\" is not a valid JSON string")
        }
        let beaconsKey = Key(stringValue: "beacons")
        if container.contains(beaconsKey), cmd == "subscribe" {
            guard let beacons = try? container.decode(Bool.self, forKey: beaconsKey) else {
                throw FieldError(reason: "\"beacons\" must be true or false")
            }
            self.beacons = beacons
        }
    }
}

/// Turns framed lines into requests; one line in, at most one request out.
final class CommandDecoder: ChannelInboundHandler {
    typealias InboundIn = InboundLine
    typealias InboundOut = ClientRequest

    let maxLineLength: Int

    init(maxLineLength: Int) {
        self.maxLineLength = maxLineLength
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let request: ClientRequest?
        switch unwrapInboundIn(data) {
        case .line(let line):
            request = ClientRequest.parse(line)
        case .tooLong:
            request = .invalid(reason: "line too long (over \(maxLineLength) bytes)")
        }
        if let request { context.fireChannelRead(wrapInboundOut(request)) }
    }
}
