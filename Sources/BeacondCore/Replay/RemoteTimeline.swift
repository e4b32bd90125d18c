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
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value ?? 0
        guard size <= Self.maxFileBytes else {
            throw FormatError(file: path, line: 0,
                              reason: "\(size) bytes: larger than the \(Self.maxFileBytes)-byte limit")
        }
        let data: [UInt8]
        do {
            data = try readRegularFile(path, maxBytes: Int(Self.maxFileBytes))
        } catch .notRegular {
            throw FormatError(file: path, line: 0, reason: "not a regular file")
        } catch .tooLarge {
            throw FormatError(file: path, line: 0, reason: "larger than the \(Self.maxFileBytes)-byte limit")
        } catch {
            throw FormatError(file: path, line: 0, reason: "cannot read the file")
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
    /// with `ts` and either `state` or `error`.
    private static func entry(_ line: [UInt8]) throws -> Entry {
        let value: RemoteJSON
        do {
            value = try RemoteJSON.parse(line)
        } catch {
            // Duplicate keys are as ambiguous here as on the wire.
            if error.isWellFormed { throw RemoteDocumentError(reason: "\(error)") }
            throw RemoteDocumentError(reason: "not valid JSON: \(error)")
        }
        guard case .object = value else { throw RemoteDocumentError(reason: "not a JSON object") }
        let time = try Self.time(value["ts"])
        if let state = value["state"] {
            return Entry(time: time, event: .fetched(try RemoteStateDocument.snapshot(fromJSON: state)))
        }
        if let error = value["error"] {
            let reason = switch error {
            case .string(let text), .number(let text): text
            default: "\(error)"
            }
            return Entry(time: time, event: .failed(reason))
        }
        throw RemoteDocumentError(reason: "each line needs \"state\" (a fetch) or \"error\" (a failed fetch)")
    }

    /// `ts` as Unix microseconds: a JSON number (not a boolean) of seconds from 0 to `maxSeconds`.
    private static func time(_ value: RemoteJSON?) throws -> Int64 {
        guard case .number(let literal)? = value else {
            throw RemoteDocumentError(reason: "\"ts\" must be a number of Unix seconds")
        }
        guard let seconds = Double(literal), seconds.isFinite else {
            throw RemoteDocumentError(
                reason: "not valid JSON here (numbers must be finite JSON numbers): \"ts\" is \(literal)")
        }
        guard seconds >= 0, seconds <= maxSeconds else {
            throw RemoteDocumentError(
                reason: "\"ts\" \(literal) is out of range: Unix seconds from 0 to 1e12 (year 33658)")
        }
        // At most 10^18 µs: the conversion cannot overflow.
        return Int64((seconds * 1_000_000).rounded())
    }
}
