import Foundation
import NIOCore

/// A client's request, parsed from one line (docs/protocol.md, "Client commands").
package enum ClientRequest: Hashable, Sendable, Decodable {
    case status
    /// `{"cmd":"status","devices":true}`: the status with the devices heard that are not GeoRacing
    /// beacons (`devices`, `devices_counters`).
    case statusWithDevices
    case ping
    case subscribe(beacons: Bool)
    /// `{"cmd":"history","since_s":7200,"after":0,"limit":1000}`: one page of the race so far
    /// (`beacond report --socket`).
    case history(HistoryQuery)
    /// A line that is not a valid command: answered with `{"type":"error","error":reason}`.
    case invalid(reason: String)

    /// The maximum number of bytes of an unknown command name echoed back in an error.
    static let echoLimit = 64

    /// Parses one line (without its "\n"). Nil for a blank line, which is ignored.
    package static func parse(_ line: ByteBuffer) -> ClientRequest? {
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
        // The strict parser of race control's documents: a repeated key makes a request as
        // ambiguous as it makes a document (`{"cmd":"status","cmd":"ping"}`), so it is refused.
        let value: RemoteJSON
        do {
            value = try RemoteJSON.parse(Array(bytes))
        } catch {
            if case .duplicateKey = error.kind { return .invalid(reason: "\(error)") }
            return .invalid(reason: "invalid JSON")
        }
        do {
            return try ClientRequest(from: RemoteJSONNodeDecoder(node: value, codingPath: []))
        } catch let error as RequestFieldError {
            return .invalid(reason: error.reason)
        } catch DecodingError.typeMismatch(_, let context) where context.codingPath.isEmpty {
            return .invalid(reason: "expected a JSON object")
        } catch {
            return .invalid(reason: "invalid JSON")
        }
    }

    enum CodingKeys: String, CodingKey {
        case cmd, beacons, devices
        case sinceSeconds = "since_s"
        case after, limit
    }

    /// Decodes a command object. Unknown fields are ignored (for forward compatibility); known
    /// ones must have the right type (`RequestFieldError`). An unknown command decodes as
    /// `.invalid`, naming it.
    package init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        guard container.contains(.cmd) else { throw RequestFieldError(reason: "missing \"cmd\"") }
        let cmd: String
        do {
            cmd = try container.decode(String.self, forKey: .cmd)
        } catch DecodingError.typeMismatch, DecodingError.valueNotFound {
            throw RequestFieldError(reason: "\"cmd\" must be a string")
        } catch {
            throw RequestFieldError(reason: "\"cmd\" is not a valid JSON string")
        }
        switch cmd {
        case "status":
            guard container.contains(.devices) else {
                self = .status
                return
            }
            guard let devices = try? container.decode(Bool.self, forKey: .devices) else {
                throw RequestFieldError(reason: "\"devices\" must be true or false")
            }
            self = devices ? .statusWithDevices : .status
        case "ping": self = .ping
        case "subscribe":
            guard container.contains(.beacons) else {
                self = .subscribe(beacons: true)
                return
            }
            guard let beacons = try? container.decode(Bool.self, forKey: .beacons) else {
                throw RequestFieldError(reason: "\"beacons\" must be true or false")
            }
            self = .subscribe(beacons: beacons)
        case "history": self = .history(try HistoryQuery(from: container))
        case let name:
            var shown = String(decoding: name.utf8.prefix(Self.echoLimit), as: UTF8.self)
            if name.utf8.count > Self.echoLimit { shown += "…" }
            self = .invalid(reason: "unknown command \"\(shown)\" (expected status, subscribe, ping or history)")
        }
    }

    /// The request as a client sends it, without its "\n"; nil for `.invalid`, which no client sends.
    package var commandLine: String? {
        switch self {
        case .status: #"{"cmd":"status"}"#
        case .statusWithDevices: #"{"cmd":"status","devices":true}"#
        case .ping: #"{"cmd":"ping"}"#
        case .subscribe(let beacons): #"{"cmd":"subscribe","beacons":\#(beacons)}"#
        case .history(let query): query.commandLine
        case .invalid: nil
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

/// A known field of a command with the wrong type (or no `cmd`): `reason` is the error sent back.
struct RequestFieldError: Error {
    let reason: String
}

/// What a `history` request asks for: the stretches that end within the last `sinceSeconds`
/// (nil: all kept), from number `after` on, at most `limit` (docs/protocol.md, "history").
package struct HistoryQuery: Hashable, Sendable {
    package var sinceSeconds: Int64?
    package var after: Int
    package var limit: Int

    /// At most 30 days back; at most 1,000 stretches a page (about 200 KB, within a client's byte bound).
    package static let maxSinceSeconds: Int64 = 30 * 86_400
    package static let maxLimit = 1_000

    package init(sinceSeconds: Int64? = nil, after: Int = 0, limit: Int = HistoryQuery.maxLimit) {
        self.sinceSeconds = sinceSeconds
        self.after = after
        self.limit = limit
    }

    fileprivate init(from container: KeyedDecodingContainer<ClientRequest.CodingKeys>) throws {
        self.init()
        if container.contains(.sinceSeconds) {
            guard let since = try? container.decode(Int64.self, forKey: .sinceSeconds),
                (1...Self.maxSinceSeconds).contains(since)
            else {
                throw RequestFieldError(
                    reason: "\"since_s\" must be a whole number of seconds from 1 to \(Self.maxSinceSeconds)")
            }
            sinceSeconds = since
        }
        if container.contains(.after) {
            guard let after = try? container.decode(Int.self, forKey: .after), after >= 0 else {
                throw RequestFieldError(reason: "\"after\" must be a whole number from 0")
            }
            self.after = after
        }
        if container.contains(.limit) {
            guard let limit = try? container.decode(Int.self, forKey: .limit), (1...Self.maxLimit).contains(limit)
            else {
                throw RequestFieldError(reason: "\"limit\" must be a whole number from 1 to \(Self.maxLimit)")
            }
            self.limit = limit
        }
    }

    package var commandLine: String {
        var line = #"{"cmd":"history""#
        if let sinceSeconds { line += #","since_s":\#(sinceSeconds)"# }
        return line + #","after":\#(after),"limit":\#(limit)}"#
    }
}
