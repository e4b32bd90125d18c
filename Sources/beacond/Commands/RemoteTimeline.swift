import CircuitState
import Foundation

/// A `--remote-timeline` file: JSON lines, each `{"ts": <unix s>, "state": {...API object...}}`
/// for a successful fetch or `{"ts": ..., "error": "text"}` for a failed one.
struct RemoteTimeline {
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

    init(path: String) throws {
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value ?? 0
        guard size <= Self.maxFileBytes else {
            throw FormatError(file: path, line: 0,
                              reason: "\(size) bytes: larger than the \(Self.maxFileBytes)-byte limit")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
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
                entries.append(try Self.entry(Data(line)))
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

    private static func entry(_ line: Data) throws -> Entry {
        do {
            _ = try RemoteJSON.parse([UInt8](line))
        } catch let error where error.isWellFormed {
            // A line holds a venue API document: duplicate keys are as ambiguous here as on the wire.
            throw RemoteDocumentError(reason: "\(error)")
        } catch {
            // A syntax error: JSONSerialization below names it in the file's terms.
        }
        let value: Any
        do {
            value = try JSONSerialization.jsonObject(with: line)
        } catch {
            throw RemoteDocumentError(reason: "not valid JSON (numbers must be finite JSON numbers)")
        }
        guard let object = value as? [String: Any] else { throw RemoteDocumentError(reason: "not a JSON object") }
        let time = try Self.time(object["ts"])
        if let state = object["state"] {
            return Entry(time: time, event: .fetched(try RemoteStateDocument.snapshot(fromJSON: state)))
        }
        if let error = object["error"] {
            return Entry(time: time, event: .failed((error as? String) ?? String(describing: error)))
        }
        throw RemoteDocumentError(reason: "each line needs \"state\" (a fetch) or \"error\" (a failed fetch)")
    }

    /// `ts` as Unix microseconds: a JSON number (not a boolean) of seconds from 0 to `maxSeconds`.
    private static func time(_ value: Any?) throws -> Int64 {
        guard let stamp = value as? NSNumber, !isBoolean(stamp) else {
            throw RemoteDocumentError(reason: "\"ts\" must be a number of Unix seconds")
        }
        let seconds = stamp.doubleValue
        guard seconds.isFinite, seconds >= 0, seconds <= maxSeconds else {
            throw RemoteDocumentError(
                reason: "\"ts\" \(stamp) is out of range: Unix seconds from 0 to 1e12 (year 33658)")
        }
        // At most 10^18 µs: the conversion cannot overflow.
        return Int64((seconds * 1_000_000).rounded())
    }

    /// JSONSerialization hands `true` and `false` over as NSNumbers too.
    private static func isBoolean(_ number: NSNumber) -> Bool {
        String(cString: number.objCType) == "c"
    }
}
