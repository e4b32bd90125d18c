import CircuitState
import Foundation

/// A `--remote-timeline` file: JSON lines, each `{"ts": <unix s>, "state": {...API object...}}`
/// for a successful fetch or `{"ts": ..., "error": "text"}` for a failed one.
package struct RemoteTimeline {
    enum Event {
        case fetched(RemoteSnapshot)
        case failed(String)
    }

    struct Entry {
        var time: Int64
        var event: Event
    }

    struct FormatError: Error, CustomStringConvertible {
        let file: String
        let line: Int
        let reason: String
        var description: String { "\(file):\(line): \(reason)" }
    }

    /// Entries in time order; entries with equal times keep their order in the file.
    var entries: [Entry]

    package init(path: String) throws {
        // stat(2) of a path never blocks, whatever it names; the size says by how much it is over.
        var info = stat()
        if stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, Int64(info.st_size) > Self.maxFileBytes {
            throw FormatError(
                file: path, line: 0,
                reason: "\(info.st_size) bytes: larger than the \(Self.maxFileBytes)-byte limit")
        }
        let data: [UInt8]
        do {
            data = try readRegularFile(path, maxBytes: Int(Self.maxFileBytes))
        } catch .tooLarge {
            throw FormatError(file: path, line: 0, reason: "larger than the \(Self.maxFileBytes)-byte limit")
        } catch {
            throw FormatError(file: path, line: 0, reason: "\(error)")
        }
        var entries: [Entry] = []
        var lineNumber = 0
        for line in data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            lineNumber += 1
            if line.allSatisfy({ $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\r") || $0 == UInt8(ascii: "\t") }) {
                continue
            }
            do {
                entries.append(try Self.entry(Array(line)))
            } catch let error as RemoteDocumentError {
                throw FormatError(file: path, line: lineNumber, reason: error.reason)
            }
        }
        self.entries = entries.enumerated().sorted { ($0.element.time, $0.offset) < ($1.element.time, $1.offset) }
            .map(\.element)
    }

    /// The file is read whole: 64 MiB holds hundreds of thousands of fetches, far more than a race day.
    static let maxFileBytes: Int64 = 64 << 20

    /// The latest `ts` accepted: 10^12 s after 1970 (year 33658); as µs, far inside Int64.
    static let maxSeconds = 1e12

    /// One line: a venue API document's rules (`RemoteJSON`: strict UTF-8, no duplicate keys),
    /// decoded as a `RemoteTimelineLine`.
    private static func entry(_ line: [UInt8]) throws -> Entry {
        let value: RemoteJSON
        do {
            value = try RemoteJSON.parse(line)
        } catch {
            // Duplicate keys are as ambiguous here as on the wire.
            if error.isWellFormed { throw RemoteDocumentError(reason: "\(error)") }
            throw RemoteDocumentError(reason: "not valid JSON: \(error)")
        }
        do {
            return try RemoteJSONDecoder.decode(RemoteTimelineLine.self, from: value).entry
        } catch {
            throw RemoteDocumentError(reason: error.message(whole: "the line"))
        }
    }
}

/// One timeline line: `ts` and either `state` (a venue body: an object, or an array whose first
/// element is one) or `error` (text; a number's literal, or any other value as written by `RemoteJSON`).
struct RemoteTimelineLine: Decodable {
    let entry: RemoteTimeline.Entry

    enum CodingKeys: String, CodingKey {
        case ts, state, error
    }

    init(from decoder: any Decoder) throws {
        let line = try decoder.container(keyedBy: CodingKeys.self)
        let time = try Self.time(line)
        if line.contains(.state) {
            // A state naming no known mode is a failed fetch, as it is from the poller.
            let body = try line.decode(VenueStateBody.self, forKey: .state)
            let event: RemoteTimeline.Event =
                if let unknownMode = body.unknownMode {
                    .failed(RemoteStateDocument.unknownModeReason(unknownMode))
                } else {
                    .fetched(body.snapshot)
                }
            entry = .init(time: time, event: event)
        } else if line.contains(.error) {
            let reason =
                switch try line.decode(RemoteJSON.self, forKey: .error) {
                case .string(let text), .number(let text): text
                case let other: "\(other)"
                }
            entry = .init(time: time, event: .failed(reason))
        } else {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: [],
                    debugDescription: "each line needs \"state\" (a fetch) or \"error\" (a failed fetch)"))
        }
    }

    /// `ts` as Unix microseconds: a JSON number (not a boolean) of seconds from 0 to `maxSeconds`.
    /// Errors quote the number as written.
    private static func time(_ line: KeyedDecodingContainer<CodingKeys>) throws -> Int64 {
        let seconds: Double
        do {
            seconds = try line.decode(Double.self, forKey: .ts)
        } catch DecodingError.typeMismatch, DecodingError.valueNotFound, DecodingError.keyNotFound {
            throw DecodingError.dataCorruptedError(
                forKey: .ts, in: line, debugDescription: "must be a number of Unix seconds")
        } catch DecodingError.dataCorrupted(let context) {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: [],
                    debugDescription: "not valid JSON here (numbers must be finite JSON numbers): "
                        + "\"ts\" \(context.debugDescription)"))
        }
        guard seconds >= 0, seconds <= RemoteTimeline.maxSeconds else {
            let written =
                if case .number(let literal)? = try? line.decode(RemoteJSON.self, forKey: .ts) {
                    String(literal.prefix(64))
                } else {
                    "\(seconds)"
                }
            throw DecodingError.dataCorruptedError(
                forKey: .ts, in: line,
                debugDescription: "\(written) is out of range: Unix seconds from 0 to 1e12 (year 33658)")
        }
        // At most 10^18 µs: the conversion cannot overflow.
        return Int64((seconds * 1_000_000).rounded())
    }
}
