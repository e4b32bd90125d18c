import CircuitState
import Glibc
import Logging

/// The v3 senders' order marks in the state directory (`signed-marks`), so that a restart does not
/// reopen old frames to replay (docs/security.md). One sender per line:
///
/// ```text
/// # kind source zone signed_at seq
/// circuit 3 7 1795852800 42
/// ```
///
/// Not secret (mode 0644): the marks are in every frame on the air.
package struct SignedMarkFile: Sendable {
    package static let fileName = "signed-marks"
    /// A full table of senders is about 160 KiB.
    static let maxBytes = 1 << 20

    package let directory: String
    package var path: String { (directory.hasSuffix("/") ? directory : directory + "/") + Self.fileName }

    package init(directory: String) {
        self.directory = directory
    }

    /// A line that is not a mark: where, and why.
    package struct LineError: Error, Hashable, Sendable, CustomStringConvertible {
        package var path: String
        package var line: Int
        package var reason: String
        package var description: String { "\(path):\(line): \(reason)" }
    }

    /// The file's text for `marks`, in sender order.
    package static func text(_ marks: [SignedSource: SignedOrder]) -> String {
        var text = "# beacond v3 order marks (docs/security.md): kind source zone signed_at seq\n"
        for (source, mark) in marks.sorted(by: { $0.key < $1.key }) {
            text += "\(source.kind == 1 ? "staff" : "circuit") \(source.sourceID) \(source.zone)"
            text += " \(mark.signedAt) \(mark.sequence)\n"
        }
        return text
    }

    /// The marks in `text`, and the lines that are not marks (skipped: the others still count).
    package static func parse(_ text: String, path: String) -> (marks: [SignedSource: SignedOrder], errors: [LineError])
    {
        var marks: [SignedSource: SignedOrder] = [:]
        var errors: [LineError] = []
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let fields = line.split(separator: " ")
            guard let first = fields.first, !first.hasPrefix("#") else { continue }
            guard fields.count == 5, first == "circuit" || first == "staff",
                let source = UInt16(fields[1]), let zone = UInt16(fields[2]), let signedAt = UInt32(fields[3]),
                let sequence = UInt16(fields[4])
            else {
                errors.append(
                    LineError(path: path, line: index + 1, reason: "expected `circuit|staff SOURCE ZONE T SEQ`"))
                continue
            }
            let key = SignedSource(kind: first == "staff" ? 1 : 0, sourceID: source, zone: zone)
            let mark = SignedOrder(signedAt: signedAt, sequence: sequence)
            marks[key] = max(marks[key] ?? mark, mark)
        }
        return (marks, errors)
    }

    /// The saved marks; none when there is no file. A file that cannot be read, and each line
    /// that is not a mark, is logged as a warning.
    package func load(logger: Logger) -> [SignedSource: SignedOrder] {
        let bytes: [UInt8]
        do {
            bytes = try readRegularFile(path, maxBytes: Self.maxBytes)
        } catch .open(let code) where code == ENOENT {
            return [:]
        } catch {
            logger.warning("ignoring the saved v3 order marks: \(path): \(error)")
            return [:]
        }
        let parsed = Self.parse(String(decoding: bytes, as: UTF8.self), path: path)
        for error in parsed.errors.prefix(5) { logger.warning("ignoring a saved v3 order mark: \(error)") }
        return parsed.marks
    }

    /// Writes `marks` atomically.
    package func save(_ marks: [SignedSource: SignedOrder]) throws {
        try FileOutput.makeDirectory(directory)
        try FileOutput.write(Array(Self.text(marks).utf8), to: path, mode: 0o644)
    }
}
