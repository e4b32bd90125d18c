import Foundation

/// Socket protocol v1 (docs/protocol.md): every message is one JSON object on one line.
package enum ProtocolVersion {
    package static let current = 1
}

/// A message of protocol v1 that the daemon writes with `JSONWriter`: `render(into:)` writes the
/// whole object, `type` first, with the field names of docs/protocol.md.
package protocol RenderedMessage {
    func render(into writer: inout JSONWriter)
}

extension RenderedMessage {
    /// One complete line: the object and its "\n".
    package var line: [UInt8] {
        var writer = JSONWriter()
        render(into: &writer)
        writer.newline()
        return writer.bytes
    }
}

/// A wall-clock time (CLOCK_REALTIME) in Unix microseconds, written as seconds with exactly six
/// decimals (`ts`, `last_error_at`).
package struct WallTime: Hashable, Sendable, Decodable {
    package var micros: Int64

    package init(micros: Int64) {
        self.micros = micros
    }

    package init(from decoder: Decoder) throws {
        let seconds = try decoder.singleValueContainer().decode(Double.self)
        // Six decimals of a Unix time fit a Double's 53 bits exactly enough to round back.
        guard let micros = Int64(exactly: (seconds * 1_000_000).rounded()) else {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(
                    codingPath: decoder.codingPath, debugDescription: "time \(seconds) is out of range"))
        }
        self.micros = micros
    }

    package var seconds: Double { Double(micros) / 1_000_000 }
}

extension JSONWriter {
    mutating func time(_ time: WallTime?) {
        if let time { seconds(micros: time.micros) } else { null() }
    }

    mutating func number(orNull value: Double?, decimals: Int) {
        if let value { number(value, decimals: decimals) } else { null() }
    }
}
